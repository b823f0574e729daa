"""Generated demo data and the guided tour behind `deskmcp demo`."""
