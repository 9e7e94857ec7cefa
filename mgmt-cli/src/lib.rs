//! Management API types, client and renderers.
