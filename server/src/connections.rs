//! How many connections the server holds and for how long: at most `max_connections` in
//! all and `max_connections_per_user` per user; a connection that has not logged in
//! within `login_timeout_seconds`, or a logged-in one idle for `idle_session_timeout_seconds`
//! with no statement running, is closed; a connection past the limit is refused with
//! PostgreSQL's "too many clients" error at once, so the file descriptors the server uses
//! stay bounded whatever reaches the port. A failed `accept` (the process's open-file
//! limit reached) is logged and tried again after a pause, never fatal.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// The limits of `server.toml`, and the connections held against them.
#[derive(Debug)]
pub struct ConnectionLimits {
    slots: Arc<Semaphore>,
    per_user: usize,
    users: Mutex<HashMap<String, usize>>,
    /// How long a connection may take to log in.
    pub login_timeout: Duration,
    /// How long a logged-in connection may stay idle.
    pub idle_timeout: Duration,
    /// Failed logins per user name and address.
    pub failed_logins: FailedLogins,
    started: Instant,
}

/// One held connection: given back when dropped.
#[derive(Debug)]
pub struct Held {
    _permit: OwnedSemaphorePermit,
}

/// One user's logged-in connection: given back when dropped.
#[derive(Debug)]
pub struct UserSlot {
    limits: Arc<ConnectionLimits>,
    user: String,
}

impl Drop for UserSlot {
    fn drop(&mut self) {
        if let Ok(mut users) = self.limits.users.lock() {
            if let Some(count) = users.get_mut(&self.user) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    users.remove(&self.user);
                }
            }
        }
    }
}

impl ConnectionLimits {
    /// The limits: `total` connections, `per_user` logged-in ones per user.
    pub fn new(
        total: usize,
        per_user: usize,
        login_timeout: Duration,
        idle_timeout: Duration,
    ) -> Arc<Self> {
        Arc::new(Self {
            slots: Arc::new(Semaphore::new(total)),
            per_user,
            users: Mutex::new(HashMap::new()),
            login_timeout,
            idle_timeout,
            failed_logins: FailedLogins::default(),
            started: Instant::now(),
        })
    }

    /// A slot for a new connection, if one is free.
    pub fn admit(&self) -> Option<Held> {
        self.slots
            .clone()
            .try_acquire_owned()
            .ok()
            .map(|permit| Held { _permit: permit })
    }

    /// A slot among `user`'s logged-in connections, if they have one free.
    pub fn admit_user(self: &Arc<Self>, user: &str) -> Option<UserSlot> {
        let mut users = self.users.lock().ok()?;
        let count = users.entry(user.to_string()).or_insert(0);
        if *count >= self.per_user {
            return None;
        }
        *count += 1;
        Some(UserSlot {
            limits: self.clone(),
            user: user.to_string(),
        })
    }

    /// The most logged-in connections of one user.
    pub fn per_user(&self) -> usize {
        self.per_user
    }

    fn now_millis(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// What the watch of one connection reads: whether it logged in, whether a statement runs
/// and when it last did anything.
#[derive(Debug)]
pub struct ConnectionState {
    limits: Arc<ConnectionLimits>,
    logged_in: AtomicBool,
    running: AtomicUsize,
    last_active: AtomicU64,
}

/// A statement under way on a connection (it is not idle while one runs).
#[derive(Debug)]
pub struct Busy(Arc<ConnectionState>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.running.fetch_sub(1, Ordering::AcqRel);
    }
}

impl ConnectionState {
    /// A connection just accepted.
    pub fn new(limits: Arc<ConnectionLimits>) -> Arc<Self> {
        let now = limits.now_millis();
        Arc::new(Self {
            limits,
            logged_in: AtomicBool::new(false),
            running: AtomicUsize::new(0),
            last_active: AtomicU64::new(now),
        })
    }

    /// The connection logged in.
    pub fn logged_in(&self) {
        self.touch();
        self.logged_in.store(true, Ordering::Release);
    }

    /// A statement starts; it ends when the guard is dropped.
    pub fn busy(self: &Arc<Self>) -> Busy {
        self.running.fetch_add(1, Ordering::AcqRel);
        self.touch();
        Busy(self.clone())
    }

    fn touch(&self) {
        self.last_active
            .store(self.limits.now_millis(), Ordering::Release);
    }

    /// Why the connection must be closed now, if it must.
    fn expired(&self, accepted: Instant) -> Option<&'static str> {
        if !self.logged_in.load(Ordering::Acquire) {
            return (accepted.elapsed() > self.limits.login_timeout).then_some("no login in time");
        }
        if self.running.load(Ordering::Acquire) > 0 {
            return None;
        }
        let idle = self
            .limits
            .now_millis()
            .saturating_sub(self.last_active.load(Ordering::Acquire));
        (Duration::from_millis(idle) > self.limits.idle_timeout).then_some("idle too long")
    }
}

/// Runs `session`, the protocol loop of a connection accepted at `accepted`, until it ends
/// or `state` says the connection has expired (then it is dropped, which closes it).
/// Returns the loop's own result, or why it was closed.
pub async fn watch<F, E>(
    session: F,
    state: &ConnectionState,
    accepted: Instant,
) -> Result<Result<(), E>, &'static str>
where
    F: Future<Output = Result<(), E>>,
{
    tokio::pin!(session);
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    loop {
        tokio::select! {
            ended = &mut session => return Ok(ended),
            _ = tick.tick() => {
                if let Some(why) = state.expired(accepted) {
                    return Err(why);
                }
            }
        }
    }
}

/// Accepts the next connection on `listener`; a failed accept (the open-file limit
/// reached, a connection reset before it was taken) is logged for `protocol` and tried
/// again after a pause that doubles up to a second, so the server never stops on it.
pub async fn accept(listener: &TcpListener, protocol: &str) -> (TcpStream, std::net::SocketAddr) {
    let mut pause = Duration::from_millis(10);
    loop {
        match listener.accept().await {
            Ok(accepted) => return accepted,
            Err(e) => {
                eprintln!(
                    "{protocol}: cannot accept a connection ({e}); trying again in {} ms",
                    pause.as_millis()
                );
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
            }
        }
    }
}

/// Refuses a PostgreSQL client over the connection limit with PostgreSQL's own error
/// (53300, "sorry, too many clients already"), then closes the connection. A client that
/// first asks for TLS or GSS encryption is told "no" so that it sends its startup message
/// and reads the error in clear (as libpq expects); the error carries nothing but that
/// text. Bounded in time and size, so a client that never writes or reads cannot hold the
/// socket.
pub async fn refuse_postgres(mut socket: TcpStream) {
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        let mut header = [0u8; 8];
        for _ in 0..2 {
            if socket.read_exact(&mut header).await.is_err() {
                return;
            }
            let length = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
            let code = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
            // SSLRequest and GSSENCRequest: decline, and read the startup message next.
            if length == 8 && (code == 80_877_103 || code == 80_877_104) {
                if socket.write_all(b"N").await.is_err() {
                    return;
                }
                continue;
            }
            // The startup message: skip the rest of it (at most 10 kB).
            let mut rest = vec![0u8; length.saturating_sub(8).min(10_240)];
            let _ = socket.read_exact(&mut rest).await;
            break;
        }
        let _ = socket.write_all(&too_many_clients()).await;
        let _ = socket.shutdown().await;
    })
    .await;
}

/// PostgreSQL's ErrorResponse "sorry, too many clients already" (FATAL, 53300).
fn too_many_clients() -> Vec<u8> {
    let mut body = Vec::new();
    for (field, value) in [
        (b'S', "FATAL"),
        (b'V', "FATAL"),
        (b'C', "53300"),
        (b'M', "sorry, too many clients already"),
    ] {
        body.push(field);
        body.extend_from_slice(value.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut message = vec![b'E'];
    let length = u32::try_from(body.len() + 4).unwrap_or(u32::MAX);
    message.extend_from_slice(&length.to_be_bytes());
    message.extend_from_slice(&body);
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn slots_are_bounded_and_given_back() {
        let limits = ConnectionLimits::new(2, 1, Duration::from_secs(1), Duration::from_secs(1));
        let a = limits.admit();
        let b = limits.admit();
        assert!(a.is_some() && b.is_some());
        assert!(limits.admit().is_none());
        drop(a);
        assert!(limits.admit().is_some());
        let alice = limits.admit_user("alice");
        assert!(alice.is_some());
        assert!(limits.admit_user("alice").is_none());
        assert!(limits.admit_user("bob").is_some());
        drop(alice);
        assert!(limits.admit_user("alice").is_some());
    }

    #[tokio::test]
    async fn a_connection_expires_without_login_or_when_idle_but_not_while_busy() {
        let wait = |ms| tokio::time::sleep(Duration::from_millis(ms));
        let limits =
            ConnectionLimits::new(4, 4, Duration::from_millis(100), Duration::from_millis(300));
        let accepted = Instant::now();
        let state = ConnectionState::new(limits.clone());
        assert_eq!(state.expired(accepted), None);
        wait(150).await;
        assert_eq!(state.expired(accepted), Some("no login in time"));
        state.logged_in();
        assert_eq!(state.expired(accepted), None);
        let busy = state.busy();
        wait(400).await;
        assert_eq!(
            state.expired(accepted),
            None,
            "a running statement is not idle"
        );
        drop(busy);
        assert_eq!(state.expired(accepted), None);
        wait(400).await;
        assert_eq!(state.expired(accepted), Some("idle too long"));
        let never = std::future::pending::<Result<(), ()>>();
        assert_eq!(watch(never, &state, accepted).await, Err("idle too long"));
        let ends = async { Ok::<(), ()>(()) };
        let fresh = ConnectionState::new(limits);
        assert_eq!(watch(ends, &fresh, Instant::now()).await, Ok(Ok(())));
    }
}

/// A Flight SQL connection held against the connection limit: the socket, its slot
/// (given back when the connection closes) and a deadline for the client's first bytes
/// (an HTTP/2 connection that never starts is closed at the login timeout).
pub struct LimitedStream {
    socket: TcpStream,
    _held: Held,
    first_bytes: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl LimitedStream {
    fn new(socket: TcpStream, held: Held, login_timeout: Duration) -> Self {
        Self {
            socket,
            _held: held,
            first_bytes: Some(Box::pin(tokio::time::sleep(login_timeout))),
        }
    }
}

impl tokio::io::AsyncRead for LimitedStream {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let read = std::pin::Pin::new(&mut self.socket).poll_read(cx, buf);
        if let std::task::Poll::Ready(Ok(())) = &read {
            if buf.filled().len() > before {
                self.first_bytes = None;
            }
            return read;
        }
        if let Some(deadline) = self.first_bytes.as_mut() {
            if deadline.as_mut().poll(cx).is_ready() {
                return std::task::Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "no request in time",
                )));
            }
        }
        read
    }
}

impl tokio::io::AsyncWrite for LimitedStream {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.socket).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.socket).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.socket).poll_shutdown(cx)
    }
}

impl tonic::transport::server::Connected for LimitedStream {
    type ConnectInfo = tonic::transport::server::TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        tonic::transport::server::Connected::connect_info(&self.socket)
    }
}

/// The Flight SQL connections of `listener`, within `limits`: one past the limit is
/// closed at once; accept failures are retried ([`accept`]).
pub fn flight_incoming(
    listener: TcpListener,
    limits: Arc<ConnectionLimits>,
) -> impl futures::Stream<Item = std::io::Result<LimitedStream>> {
    futures::stream::unfold((listener, limits), |(listener, limits)| async move {
        loop {
            let (socket, _peer) = accept(&listener, "flight_sql").await;
            let _ = socket.set_nodelay(true);
            if let Some(held) = limits.admit() {
                let stream = LimitedStream::new(socket, held, limits.login_timeout);
                return Some((Ok(stream), (listener, limits)));
            }
            drop(socket);
        }
    })
}

/// Failed logins, counted per user name and per client address: past
/// [`FAILED_LOGINS`] in [`FAILED_LOGIN_WINDOW`], the name or address is refused until the
/// window ends, so passwords cannot be guessed at the speed the server answers (about 200
/// a second before), whatever the name (unknown names are counted alike).
#[derive(Debug, Default)]
pub struct FailedLogins {
    counts: Mutex<HashMap<String, (Instant, u32)>>,
}

/// Failed logins a user name or an address may have in one window.
pub const FAILED_LOGINS: u32 = 10;

/// The window failed logins are counted in.
pub const FAILED_LOGIN_WINDOW: Duration = Duration::from_secs(60);

impl FailedLogins {
    /// How long `keys` (a user name, an address) must still wait, if one is locked out.
    pub fn locked(&self, keys: &[String]) -> Option<Duration> {
        let counts = self.counts.lock().ok()?;
        keys.iter()
            .filter_map(|key| counts.get(key))
            .filter(|(start, count)| {
                *count >= FAILED_LOGINS && start.elapsed() < FAILED_LOGIN_WINDOW
            })
            .map(|(start, _)| FAILED_LOGIN_WINDOW.saturating_sub(start.elapsed()))
            .max()
    }

    /// Counts a failed login of `keys`.
    pub fn failed(&self, keys: &[String]) {
        let Ok(mut counts) = self.counts.lock() else {
            return;
        };
        // Forget what is past its window, so the map stays as small as the attack.
        if counts.len() > 10_000 {
            counts.retain(|_, (start, _)| start.elapsed() < FAILED_LOGIN_WINDOW);
        }
        for key in keys {
            let entry = counts.entry(key.clone()).or_insert((Instant::now(), 0));
            if entry.0.elapsed() >= FAILED_LOGIN_WINDOW {
                *entry = (Instant::now(), 0);
            }
            entry.1 += 1;
        }
    }
}

#[cfg(test)]
mod login_tests {
    use super::*;

    #[test]
    fn a_name_or_address_is_locked_out_after_its_failures() {
        let logins = FailedLogins::default();
        let keys = |user: &str, addr: &str| vec![format!("user {user}"), format!("address {addr}")];
        for _ in 0..FAILED_LOGINS - 1 {
            logins.failed(&keys("alice", "10.0.0.1"));
        }
        assert_eq!(logins.locked(&keys("alice", "10.0.0.1")), None);
        logins.failed(&keys("alice", "10.0.0.1"));
        assert!(
            logins.locked(&keys("alice", "10.0.0.2")).is_some(),
            "the name is locked"
        );
        assert!(
            logins.locked(&keys("bob", "10.0.0.1")).is_some(),
            "the address is locked"
        );
        assert_eq!(logins.locked(&keys("bob", "10.0.0.2")), None);
    }
}
