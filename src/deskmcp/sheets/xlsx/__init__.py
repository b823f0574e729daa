"""The .xlsx package: its parts and their sizes (`parts`), the XML of cells (`cellxml`), sheet data
read by streaming (`sheetdata`, the one reader of shared strings), and the in-place patch of a
write (`patch`, over `patch_sheets` and `patch_xml`)."""
