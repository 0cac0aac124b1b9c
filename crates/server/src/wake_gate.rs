//! Polling a long-lived future only when it was woken.
//!
//! A connection waits on the same few rare events (the server stopping, the
//! client being killed) in every wait for input, for the whole life of the
//! connection. Polling such a future each time the connection's task wakes
//! (once per request without pipelining) re-checks its channel under a lock
//! every time: hundreds of instructions per request for events that almost
//! never happen. A [`WakeGate`] hands the future a waker of its own that
//! records being woken before waking the task, and polls the future again
//! only when that waker fired, or when a different task polls it (whose
//! waker the future has not seen). Futures are only required to make
//! progress after their waker is woken, so nothing is missed.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

/// What the gated future's waker shares with the gate.
#[derive(Debug, Default)]
struct Flag {
    /// Set when the gated future's waker was woken, cleared before it is polled.
    fired: AtomicBool,
    /// The task to wake.
    task: Mutex<Option<Waker>>,
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.fired.store(true, Ordering::Release);
        let task = self.task.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(waker) = task.as_ref() {
            waker.wake_by_ref();
        }
    }
}

/// Polls a future only after its waker fired (see the module documentation).
#[derive(Debug, Default)]
pub struct WakeGate {
    flag: Arc<Flag>,
    /// The task waker the gated future was last polled for.
    last: Option<Waker>,
}

impl WakeGate {
    /// A gate whose future has not been polled yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Poll `fut` if it may have progressed since it was last polled through
    /// this gate; `Pending` otherwise. Always the same future per gate.
    pub fn poll<F: Future + ?Sized>(&mut self, fut: Pin<&mut F>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.poll_fn(cx, |cx| fut.poll(cx))
    }

    /// [`WakeGate::poll`] for a poll function (`poll_recv` of a channel).
    /// After a `Ready` the function registered no waker, so the next call
    /// polls it again.
    pub fn poll_fn<T>(&mut self, cx: &mut Context<'_>, poll: impl FnOnce(&mut Context<'_>) -> Poll<T>) -> Poll<T> {
        let same_task = self.last.as_ref().is_some_and(|w| w.will_wake(cx.waker()));
        if same_task {
            if !self.flag.fired.swap(false, Ordering::AcqRel) {
                return Poll::Pending;
            }
        } else {
            *self.flag.task.lock().unwrap_or_else(|e| e.into_inner()) = Some(cx.waker().clone());
            self.last = Some(cx.waker().clone());
            self.flag.fired.store(false, Ordering::Release);
        }
        let waker = Waker::from(Arc::clone(&self.flag));
        let result = poll(&mut Context::from_waker(&waker));
        if result.is_ready() {
            self.flag.fired.store(true, Ordering::Release);
        }
        result
    }

    /// True when the gated function returned `Pending` when last polled and
    /// its waker has not fired since: it has nothing new (for a channel: its
    /// queue is empty, as every send after that poll wakes the waker).
    pub fn quiet(&self) -> bool {
        self.last.is_some() && !self.flag.fired.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Counts its polls; ready once `open` is set, waking whoever polled it last.
    struct Door {
        open: Arc<AtomicBool>,
        polls: Arc<AtomicUsize>,
        waker: Arc<Mutex<Option<Waker>>>,
    }

    impl Future for Door {
        type Output = ();
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            self.polls.fetch_add(1, Ordering::SeqCst);
            if self.open.load(Ordering::SeqCst) {
                return Poll::Ready(());
            }
            *self.waker.lock().unwrap() = Some(cx.waker().clone());
            Poll::Pending
        }
    }

    struct CountWakes(AtomicUsize);
    impl Wake for CountWakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn the_future_is_polled_again_only_after_its_waker_fired() {
        let (open, polls, waker) = (Arc::default(), Arc::new(AtomicUsize::new(0)), Arc::new(Mutex::new(None)));
        let mut door = Box::pin(Door { open: Arc::clone(&open), polls: Arc::clone(&polls), waker: Arc::clone(&waker) });
        let task = Arc::new(CountWakes(AtomicUsize::new(0)));
        let task_waker = Waker::from(Arc::clone(&task));
        let mut cx = Context::from_waker(&task_waker);
        let mut gate = WakeGate::new();
        assert!(gate.poll(door.as_mut(), &mut cx).is_pending());
        for _ in 0..10 {
            assert!(gate.poll(door.as_mut(), &mut cx).is_pending());
        }
        assert_eq!(polls.load(Ordering::SeqCst), 1, "not woken: not polled again");
        open.store(true, Ordering::SeqCst);
        waker.lock().unwrap().take().expect("registered").wake();
        assert_eq!(task.0.load(Ordering::SeqCst), 1, "the task is woken");
        assert!(gate.poll(door.as_mut(), &mut cx).is_ready());
        assert_eq!(polls.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_ready_poll_function_is_polled_again() {
        let task = Arc::new(CountWakes(AtomicUsize::new(0)));
        let task_waker = Waker::from(Arc::clone(&task));
        let mut cx = Context::from_waker(&task_waker);
        let mut gate = WakeGate::new();
        assert!(!gate.quiet(), "never polled");
        let mut queue = vec![1, 2];
        let mut registered: Option<Waker> = None;
        let mut take = |cx: &mut Context<'_>| match queue.pop() {
            Some(x) => Poll::Ready(x),
            None => {
                registered = Some(cx.waker().clone());
                Poll::Pending
            }
        };
        assert_eq!(gate.poll_fn(&mut cx, &mut take), Poll::Ready(2));
        assert!(!gate.quiet());
        assert_eq!(gate.poll_fn(&mut cx, &mut take), Poll::Ready(1));
        assert_eq!(gate.poll_fn(&mut cx, &mut take), Poll::Pending);
        assert!(gate.quiet());
        assert_eq!(gate.poll_fn(&mut cx, |_| Poll::Ready(9)), Poll::Pending, "not woken: not polled");
        registered.take().expect("registered").wake();
        assert!(!gate.quiet());
        assert_eq!(gate.poll_fn(&mut cx, |_| Poll::Ready(9)), Poll::Ready(9));
    }

    #[test]
    fn another_task_polls_the_future_itself() {
        let (open, polls, waker) = (Arc::default(), Arc::new(AtomicUsize::new(0)), Arc::new(Mutex::new(None)));
        let mut door = Box::pin(Door { open, polls: Arc::clone(&polls), waker: Arc::clone(&waker) });
        let (a, b) = (Arc::new(CountWakes(AtomicUsize::new(0))), Arc::new(CountWakes(AtomicUsize::new(0))));
        let (wa, wb) = (Waker::from(Arc::clone(&a)), Waker::from(Arc::clone(&b)));
        let mut gate = WakeGate::new();
        assert!(gate.poll(door.as_mut(), &mut Context::from_waker(&wa)).is_pending());
        assert!(gate.poll(door.as_mut(), &mut Context::from_waker(&wb)).is_pending());
        assert_eq!(polls.load(Ordering::SeqCst), 2);
        waker.lock().unwrap().take().expect("registered").wake();
        assert_eq!((a.0.load(Ordering::SeqCst), b.0.load(Ordering::SeqCst)), (0, 1), "the latest task is woken");
    }
}
