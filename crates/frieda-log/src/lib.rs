//! Frieda's partition log (placeholder: the storage engine lands in the next commit).
