//! What one public statement may take of the server: one of a fixed number of slots while
//! it runs (so memory and cores are shared out however many analysts connect), and at most
//! a set time from its arrival (so a statement that never ends, or a client that stops
//! reading its results, gives its slot back). The owner's statements are not limited.
//! Every statement also stops when its client cancels it.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::channel::oneshot;
use futures::future::{BoxFuture, Shared};
use futures::{FutureExt, Stream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::AbortHandle;
use tokio::time::Instant;

/// The slots of public statements and their time limit.
#[derive(Debug)]
pub struct Admission {
    slots: Arc<Semaphore>,
    timeout: Duration,
}

/// When a public statement must have ended: its arrival plus the time limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline {
    at: Instant,
    timeout: Duration,
    /// Whether it is the connection's own `statement_timeout` (else the server's limit).
    session: bool,
}

/// A running public statement's slot; given back when the statement's results are
/// dropped or at its deadline, whichever comes first.
#[derive(Debug)]
pub struct Slot {
    permit: Mutex<Option<OwnedSemaphorePermit>>,
    /// The task that gives the slot back at the deadline; stopped with the slot.
    timer: Mutex<Option<AbortHandle>>,
}

/// Why a statement must stop before it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The client asked (a PostgreSQL cancel request: Ctrl-C in psql).
    Cancelled,
    /// The statement ran out of time (waiting for a slot included); its time limit.
    TimedOut(Duration),
    /// The statement ran past the connection's own `statement_timeout`.
    SessionTimedOut(Duration),
    /// The statement hit a defect of the server (a panic, caught; the server's log has
    /// the details, the client only this).
    Failed,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Cancelled => write!(f, "canceling statement due to user request"),
            Stop::TimedOut(limit) => write!(
                f,
                "canceling statement due to statement timeout: a public user's statement may run {} s (public_statement_timeout_seconds)",
                limit.as_secs()
            ),
            Stop::SessionTimedOut(limit) => write!(
                f,
                "canceling statement due to statement timeout (statement_timeout = {} ms)",
                limit.as_millis()
            ),
            Stop::Failed => write!(
                f,
                "internal error: the server could not run this statement (its log says why); the connection stays open"
            ),
        }
    }
}

impl Admission {
    /// `slots` statements at once (at least one), each for at most `timeout`.
    pub fn new(slots: usize, timeout: Duration) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(slots.max(1))),
            timeout,
        }
    }

    /// The deadline of a statement arriving now.
    pub fn deadline(&self) -> Deadline {
        Deadline {
            at: Instant::now() + self.timeout,
            timeout: self.timeout,
            session: false,
        }
    }

    /// The deadline of a statement arriving now on a connection whose own
    /// `statement_timeout` is `session` (when set): the sooner of it and the server's.
    pub fn deadline_with(&self, session: Option<Duration>) -> Deadline {
        match session {
            Some(limit) if limit < self.timeout => Deadline::session(limit),
            _ => self.deadline(),
        }
    }

    /// Waits for a free slot, for as long as it takes (callers wait together with the
    /// statement's [`StopSignal`], which ends at its deadline). At the deadline the slot
    /// is given back even if the results are still held (a client that stopped reading a
    /// suspended portal).
    pub async fn enter(&self, deadline: Deadline) -> Arc<Slot> {
        let permit = self.slots.clone().acquire_owned().await.ok();
        let slot = Arc::new(Slot {
            permit: Mutex::new(permit),
            timer: Mutex::new(None),
        });
        let weak = Arc::downgrade(&slot);
        let timer = tokio::spawn(async move {
            tokio::time::sleep_until(deadline.at).await;
            if let Some(slot) = weak.upgrade() {
                slot.give_back();
            }
        });
        *lock(&slot.timer) = Some(timer.abort_handle());
        slot
    }
}

impl Deadline {
    /// The deadline a connection's own `statement_timeout` of `limit` sets for a
    /// statement arriving now.
    pub fn session(limit: Duration) -> Self {
        Self {
            at: Instant::now() + limit,
            timeout: limit,
            session: true,
        }
    }
}

impl Slot {
    fn give_back(&self) {
        lock(&self.permit).take();
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(timer) = lock(&self.timer).take() {
            timer.abort();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// A statement that has begun ([`Admission::begin`]): the slot it holds (a public user's
/// statement) and what stops it.
pub struct Admitted {
    /// The slot, for a public user's statement.
    pub slot: Option<Arc<Slot>>,
    /// Resolves when the statement must stop.
    pub stop: StopSignal,
}

impl Admission {
    /// Begins a statement: the one path of both protocols. An owner's statement
    /// (`public` false) takes no slot and stops only at the client's `cancel` or at the
    /// connection's own timeout; a public user's waits for a slot, at most until its
    /// deadline (the server's limit, or the connection's own when shorter), and stops at
    /// either.
    pub async fn begin(
        &self,
        public: bool,
        cancel: Option<oneshot::Receiver<()>>,
        own_timeout: Option<Duration>,
    ) -> Result<Admitted, Stop> {
        if !public {
            return Ok(Admitted {
                slot: None,
                stop: stop_signal(cancel, own_timeout.map(Deadline::session)),
            });
        }
        let deadline = self.deadline_with(own_timeout);
        let stop = stop_signal(cancel, Some(deadline));
        tokio::select! {
            slot = self.enter(deadline) => Ok(Admitted { slot: Some(slot), stop }),
            stopped = stop.clone() => Err(stopped),
        }
    }
}

impl Admitted {
    /// Runs `work` (planning, starting) unless the statement must stop first; a panic in
    /// it stops the statement ([`Stop::Failed`]).
    pub async fn run<T>(&self, work: impl Future<Output = T>) -> Result<T, Stop> {
        tokio::select! {
            result = guarded(work) => result,
            stopped = self.stop.clone() => Err(stopped),
        }
    }

    /// `rows`, read until the statement must stop, holding the slot until they end.
    pub fn bound<S, T, E>(
        &self,
        rows: S,
        error: impl Fn(Stop) -> E + Send + 'static,
    ) -> Bounded<S, E>
    where
        S: Stream<Item = Result<T, E>>,
    {
        bounded(rows, self.slot.clone(), self.stop.clone(), error)
    }
}

/// Resolves when a statement must stop; its clones resolve together.
pub type StopSignal = Shared<BoxFuture<'static, Stop>>;

/// The signal of a statement that stops when `cancel` fires (a dropped sender is not a
/// cancel) or at `deadline`, whichever comes first; never without either.
pub fn stop_signal(
    cancel: Option<oneshot::Receiver<()>>,
    deadline: Option<Deadline>,
) -> StopSignal {
    let cancelled = async move {
        if let Some(cancel) = cancel {
            if cancel.await.is_ok() {
                return;
            }
        }
        std::future::pending::<()>().await
    };
    let late = async move {
        match deadline {
            Some(deadline) => {
                tokio::time::sleep_until(deadline.at).await;
                if deadline.session {
                    Stop::SessionTimedOut(deadline.timeout)
                } else {
                    Stop::TimedOut(deadline.timeout)
                }
            }
            None => std::future::pending().await,
        }
    };
    async move {
        tokio::select! {
            () = cancelled => Stop::Cancelled,
            stop = late => stop,
        }
    }
    .boxed()
    .shared()
}

/// `work`, with a panic in it caught as [`Stop::Failed`].
pub async fn guarded<T>(work: impl Future<Output = T>) -> Result<T, Stop> {
    AssertUnwindSafe(work)
        .catch_unwind()
        .await
        .map_err(|_| Stop::Failed)
}

/// `stream` holding `slot` (if any) until it ends or is dropped, and ending with
/// `error(stop)` when `stop` fires first.
pub fn bounded<S, T, E>(
    stream: S,
    slot: Option<Arc<Slot>>,
    stop: StopSignal,
    error: impl Fn(Stop) -> E + Send + 'static,
) -> Bounded<S, E>
where
    S: Stream<Item = Result<T, E>>,
{
    Bounded {
        stream: Some(Box::pin(stream)),
        stop,
        slot,
        error: Box::new(error),
    }
}

/// The stream of [`bounded`].
pub struct Bounded<S, E> {
    /// `None` once the stream ended or stopped: its work is dropped at once.
    stream: Option<Pin<Box<S>>>,
    stop: StopSignal,
    /// Given back as soon as the stream ends or stops.
    slot: Option<Arc<Slot>>,
    error: Box<dyn Fn(Stop) -> E + Send>,
}

impl<S, T, E> Stream for Bounded<S, E>
where
    S: Stream<Item = Result<T, E>>,
{
    type Item = Result<T, E>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(stream) = self.stream.as_mut() else {
            return Poll::Ready(None);
        };
        // A panic while producing rows ends this statement with an error, never the
        // connection or the server.
        let item = match catch_unwind(AssertUnwindSafe(|| stream.as_mut().poll_next(cx))) {
            Ok(item) => item,
            Err(_) => {
                self.stream = None;
                self.slot = None;
                return Poll::Ready(Some(Err((self.error)(Stop::Failed))));
            }
        };
        if let Poll::Ready(None) = item {
            self.stream = None;
            self.slot = None;
            return Poll::Ready(None);
        }
        // The stop is checked at every poll: a stream whose items are always ready still
        // stops.
        if let Poll::Ready(stop) = self.stop.poll_unpin(cx) {
            self.stream = None;
            self.slot = None;
            return Poll::Ready(Some(Err((self.error)(stop))));
        }
        item
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    const SHORT: Duration = Duration::from_millis(300);

    fn text(stop: Stop) -> String {
        stop.to_string()
    }

    /// A slot, waiting at most until the statement's deadline.
    async fn enter(admission: &Admission) -> Result<(Arc<Slot>, StopSignal), Stop> {
        let deadline = admission.deadline();
        let stop = stop_signal(None, Some(deadline));
        tokio::select! {
            slot = admission.enter(deadline) => Ok((slot, stop)),
            stopped = stop.clone() => Err(stopped),
        }
    }

    #[tokio::test]
    async fn slots_are_shared_out_and_given_back() {
        let admission = Admission::new(2, SHORT);
        let _a = enter(&admission).await.expect("a slot");
        let _b = enter(&admission).await.expect("a slot");
        // Both slots are taken: a third statement waits, and runs out of time.
        assert_eq!(enter(&admission).await.err(), Some(Stop::TimedOut(SHORT)));
        // A finished stream gives its slot back at once (long before its deadline).
        let admission = Admission::new(1, Duration::from_secs(60));
        let (slot, stop) = enter(&admission).await.expect("a slot");
        let items = futures::stream::iter([Ok::<_, String>(1)]);
        let done = bounded(items, Some(slot), stop, text);
        assert_eq!(done.collect::<Vec<_>>().await, vec![Ok(1)]);
        let again = tokio::time::timeout(SHORT, enter(&admission)).await;
        assert!(matches!(again, Ok(Ok(_))));
    }

    #[tokio::test]
    async fn a_stream_stops_at_its_deadline() {
        let admission = Admission::new(1, SHORT);
        let (slot, stop) = enter(&admission).await.expect("a slot");
        let never = futures::stream::pending::<Result<u8, String>>();
        let items: Vec<_> = bounded(never, Some(slot), stop, text).collect().await;
        assert_eq!(items, vec![Err(text(Stop::TimedOut(SHORT)))]);
        assert!(enter(&admission).await.is_ok());
    }

    #[tokio::test]
    async fn a_stream_whose_items_are_always_ready_stops_too() {
        let admission = Admission::new(1, SHORT);
        let (slot, stop) = enter(&admission).await.expect("a slot");
        let endless = futures::stream::repeat_with(|| Ok::<_, String>(0u8)).then(|x| async move {
            tokio::task::yield_now().await;
            x
        });
        let items: Vec<_> = bounded(endless, Some(slot), stop, text).collect().await;
        assert_eq!(items.last(), Some(&Err(text(Stop::TimedOut(SHORT)))));
    }

    #[tokio::test]
    async fn a_held_stream_gives_its_slot_back_at_the_deadline() {
        let admission = Admission::new(1, SHORT);
        let (slot, stop) = enter(&admission).await.expect("a slot");
        // Results kept but never read (a suspended portal).
        let never = futures::stream::pending::<Result<u8, String>>();
        let _held = bounded(never, Some(slot), stop, text);
        tokio::time::sleep(SHORT * 2).await;
        let next = tokio::time::timeout(SHORT / 3, enter(&admission)).await;
        assert!(matches!(next, Ok(Ok(_))));
    }

    #[tokio::test]
    async fn a_cancel_stops_the_stream_and_a_dropped_sender_does_not() {
        let (cancel, fired) = oneshot::channel();
        let stop = stop_signal(Some(fired), None);
        let never = futures::stream::pending::<Result<u8, String>>();
        let mut stream = bounded(never, None, stop.clone(), text);
        let _ = cancel.send(());
        assert_eq!(stream.next().await, Some(Err(text(Stop::Cancelled))));
        assert_eq!(stream.next().await, None);
        assert_eq!(stop.await, Stop::Cancelled);
        // The next statement replaces the sender: that is not a cancel.
        let (replaced, fired) = oneshot::channel::<()>();
        let stop = stop_signal(Some(fired), None);
        drop(replaced);
        assert!(tokio::time::timeout(SHORT, stop).await.is_err());
    }

    #[tokio::test]
    async fn a_panic_ends_the_statement_not_the_server() {
        let panicking = futures::stream::poll_fn(|_| -> Poll<Option<Result<u8, String>>> {
            panic!("a defect")
        });
        let items: Vec<_> = bounded(panicking, None, stop_signal(None, None), text)
            .collect()
            .await;
        assert_eq!(items, vec![Err(text(Stop::Failed))]);
        let work = async {
            if items.len() == 1 {
                panic!("another defect");
            }
            1
        };
        assert_eq!(guarded(work).await, Err(Stop::Failed));
        assert_eq!(guarded(async { 2 }).await, Ok(2));
    }

    #[test]
    fn the_errors_say_why() {
        assert_eq!(
            Stop::TimedOut(Duration::from_secs(300)).to_string(),
            "canceling statement due to statement timeout: a public user's statement may run 300 s (public_statement_timeout_seconds)"
        );
        assert_eq!(
            Stop::Cancelled.to_string(),
            "canceling statement due to user request"
        );
    }
}
