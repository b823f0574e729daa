"""The places spreadsheets live: local workbook files, or Google Sheets."""
