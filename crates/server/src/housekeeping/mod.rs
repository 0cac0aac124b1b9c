//! What the server does by itself, once a second from the acceptor:
//! giving idle connections' buffers back ([`idle_trim`]), returning freed
//! memory to the system ([`heap_return`]), and knowing how large a reply
//! may be ([`reply_budget`]).

pub mod heap_return;
pub mod idle_trim;
pub mod reply_budget;
