"""Reviews: feedback on runs (`feedback`), which runs need one (`queue`), datasets from them (`dataset`)."""
