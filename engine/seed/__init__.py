"""The seed tables' row models (records.py) and their all-or-nothing CSV reader (reader.py): the bottom layer
the catalogue and the store are built on, so it imports nothing above it."""
