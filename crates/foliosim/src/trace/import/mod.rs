//! Importers of traces other tools write: valgrind lackey (lackey.rs), DAMON (damo.rs).
