"""The project as a whole: import layers, version floors, the shipped samples."""
