"""``metastab study lost-in-the-middle`` (data/lost-in-the-middle/): Duerinckx–Geshkovski–Rossi:
the causal ALiBi particle system of their script, its t_crit(β) and its U-shaped retrieval profile.
"""
