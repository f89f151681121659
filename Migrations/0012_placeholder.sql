-- PLACEHOLDER on the artifacts branch only: version 12 belongs to the `needs` branch (h2), whose
-- own 0012 replaces this file at the merge (delete this one). Migrations must run without gaps.
SELECT 1;
