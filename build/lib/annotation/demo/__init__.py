"""Demo content: small, open studies for every protocol in PROTOCOLS.md, some with answers already given.

The texts live in ``data/*.yaml`` (written for Funnybone, taken from no paper
or data set); ``builder`` turns them into studies through the services.
``python manage.py load_demo`` runs it.
"""
