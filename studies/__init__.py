"""The reproduction studies, one package per study (``metastab study NAME``; the package of
study ``NAME`` is ``studies.NAME`` with ``-`` written ``_``): see ``studies/README.md`` and
:mod:`metastab.studies`, the framework that runs them."""
