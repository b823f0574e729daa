"""Spreadsheets: local workbooks (xlsx, ods, csv) by default, Google Sheets when connected."""
