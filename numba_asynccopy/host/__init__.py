"""Host-side helpers: tensor maps (and, merged from other branches, launches)."""
