"""Code every demo uses; knows no demo (imports point down only)."""
