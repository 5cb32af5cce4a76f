//! Table providers that serve rows the crate computed: once, when a query first reads them
//! ([`lazy`]), or carried inside a plan to the processes of a cluster ([`shipped`]).

pub mod lazy;
pub mod shipped;
