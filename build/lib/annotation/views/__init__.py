"""Views of the annotation app: the annotator's flow and the researcher's pages."""
