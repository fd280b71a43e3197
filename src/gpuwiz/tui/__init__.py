"""The Textual wizard. Imported only when the wizard is asked for."""
