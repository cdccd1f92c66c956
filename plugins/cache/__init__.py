"""Work counters and the content-addressed on-disk cache every later stage shares."""
