"""Python code tooling for the converter: parsing, templates, annotations, names, loading."""
