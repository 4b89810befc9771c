//! Single flight: concurrent callers asking for the same key share one fetch.
//!
//! The first caller (the leader) runs the fetch in its own future (no task is spawned); the
//! others wait for its outcome on a `watch` channel, each until its own deadline. Nothing is
//! locked across an await: the map of flights is locked only to join or leave one. A leader
//! that is dropped mid-fetch (its caller gave up) leaves the map first and then drops its
//! sender, so the waiting callers wake up and one of them leads a new fetch.
//!
//! A flight can also be claimed at once and finished later, elsewhere
//! ([`lead`](SingleFlight::lead), [`Leading::finish`]): the key is taken from the moment of the
//! claim, so callers arriving after it wait for what the claimant does — unless they ask not
//! to ([`OnClaimed::Skip`]): then they learn at once that the key is claimed.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use mcp_core::sync::lock;
use mcp_core::Error;
use tokio::sync::watch;
use tokio::time::Instant;

type Landed<T> = Option<Result<T, Error>>;
type Flights<T> = Arc<Mutex<HashMap<String, Flight<T>>>>;

/// Who ran a fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// This caller ran it.
    Leader,
    /// This caller waited for another's.
    Follower,
}

/// What a caller of [`SingleFlight::run_unless_claimed`] does when the flight under way for
/// its key was claimed ([`lead`](SingleFlight::lead)) rather than run by another caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnClaimed {
    /// Wait for the claimant's outcome, like any follower.
    Wait,
    /// Do not wait: the call returns `None` at once.
    Skip,
}

/// Flights by key.
pub(crate) struct SingleFlight<T> {
    flights: Flights<T>,
    next_id: AtomicU64,
}

struct Flight<T> {
    id: u64,
    /// Taken with [`lead`](SingleFlight::lead) (or [`lead_when_free`](SingleFlight::lead_when_free)),
    /// to be finished elsewhere; not a [`run`](SingleFlight::run).
    claimed: bool,
    outcome: watch::Receiver<Landed<T>>,
}

/// The leader's hold on its flight: leaves the map when dropped (finished or not), before
/// the sender goes. Owns what it needs, so it can be handed to a spawned task.
pub(crate) struct Leading<T> {
    flights: Flights<T>,
    key: String,
    id: u64,
    sender: watch::Sender<Landed<T>>,
}

impl<T> Leading<T> {
    /// Ends the flight with `outcome`: its followers get a clone. The flight leaves the map
    /// first, so a follower that acts on the outcome (and joins again) finds it gone.
    pub(crate) fn finish(self, outcome: Result<T, Error>) {
        self.leave();
        self.sender.send_replace(Some(outcome));
    }

    fn leave(&self) {
        let mut flights = lock(&self.flights);
        if flights.get(&self.key).is_some_and(|f| f.id == self.id) {
            flights.remove(&self.key);
        }
    }
}

impl<T> Drop for Leading<T> {
    fn drop(&mut self) {
        self.leave();
        // `sender` drops after this body: waiters find the map without this flight.
    }
}

enum Joined<T> {
    Leader(Leading<T>),
    /// The flight under way, and whether it was claimed.
    Follower(watch::Receiver<Landed<T>>, bool),
}

impl<T: Clone> SingleFlight<T> {
    pub(crate) fn new() -> Self {
        SingleFlight {
            flights: Arc::default(),
            next_id: AtomicU64::new(0),
        }
    }

    /// Whether a fetch for `key` is under way (run or claimed).
    pub(crate) fn is_running(&self, key: &str) -> bool {
        lock(&self.flights).contains_key(key)
    }

    /// Whether a fetch for `key` started by [`run`](Self::run) is under way (a claimed flight
    /// does not count).
    pub(crate) fn is_run_by_a_caller(&self, key: &str) -> bool {
        lock(&self.flights).get(key).is_some_and(|f| !f.claimed)
    }

    /// Joins the flight of `key`, or starts one (`claimed` when taken by [`lead`](Self::lead)).
    fn join(&self, key: &str, claimed: bool) -> Joined<T> {
        let mut flights = lock(&self.flights);
        if let Some(flight) = flights.get(key) {
            // A sender that is gone without an outcome belongs to a leader that is leaving.
            if flight.outcome.has_changed().is_ok() || flight.outcome.borrow().is_some() {
                return Joined::Follower(flight.outcome.clone(), flight.claimed);
            }
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, outcome) = watch::channel(None);
        flights.insert(
            key.to_owned(),
            Flight {
                id,
                claimed,
                outcome,
            },
        );
        Joined::Leader(Leading {
            flights: self.flights.clone(),
            key: key.to_owned(),
            id,
            sender,
        })
    }

    /// Claims the flight of `key` now, unless another is under way: later callers of
    /// [`run`](Self::run) wait for the claimant's [`finish`](Leading::finish) (or drop).
    pub(crate) fn lead(&self, key: &str) -> Option<Leading<T>> {
        match self.join(key, true) {
            Joined::Leader(leading) => Some(leading),
            Joined::Follower(..) => None,
        }
    }

    /// Claims the flight of `key` once the one under way (if any) is over; `None` when that
    /// takes until `deadline`.
    pub(crate) async fn lead_when_free(&self, key: &str, deadline: Instant) -> Option<Leading<T>> {
        loop {
            match self.join(key, true) {
                Joined::Leader(leading) => return Some(leading),
                Joined::Follower(mut outcome, _) => {
                    // Finished, or its leader left: either way, try again.
                    let over = outcome.wait_for(Option::is_some);
                    if tokio::time::timeout_at(deadline, over).await.is_err() {
                        return None;
                    }
                }
            }
        }
    }

    /// Runs `fetch` for `key`, or waits (until `deadline`) for the fetch another caller is
    /// running. `timed_out` makes the error of a follower that waited until its deadline.
    pub(crate) async fn run<F, Fut>(
        &self,
        key: &str,
        deadline: Instant,
        fetch: F,
        timed_out: impl Fn() -> Error,
    ) -> (Result<T, Error>, Role)
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        match self
            .run_unless_claimed(key, deadline, OnClaimed::Wait, fetch, &timed_out)
            .await
        {
            Some(ran) => ran,
            // Unreachable: only `OnClaimed::Skip` gives up on a claimed flight.
            None => (Err(timed_out()), Role::Follower),
        }
    }

    /// [`run`](Self::run), except that a flight under way that was claimed
    /// ([`lead`](Self::lead)) is waited for only when `on_claimed` says so; `None` when it
    /// was skipped (nothing was run).
    pub(crate) async fn run_unless_claimed<F, Fut>(
        &self,
        key: &str,
        deadline: Instant,
        on_claimed: OnClaimed,
        fetch: F,
        timed_out: impl Fn() -> Error,
    ) -> Option<(Result<T, Error>, Role)>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        let mut fetch = Some(fetch);
        loop {
            match self.join(key, false) {
                Joined::Leader(leading) => {
                    let Some(fetch) = fetch.take() else {
                        // Unreachable: a caller leads at most once, and returns then.
                        return Some((Err(timed_out()), Role::Leader));
                    };
                    let outcome = fetch().await;
                    leading.finish(outcome.clone());
                    return Some((outcome, Role::Leader));
                }
                Joined::Follower(_, true) if on_claimed == OnClaimed::Skip => return None,
                Joined::Follower(mut outcome, _) => {
                    let waited =
                        tokio::time::timeout_at(deadline, outcome.wait_for(Option::is_some)).await;
                    match waited {
                        Ok(Ok(done)) => {
                            if let Some(result) = done.as_ref() {
                                return Some((result.clone(), Role::Follower));
                            }
                        }
                        // The leader gave up without an outcome: lead a new fetch (or join
                        // the one another waiter started).
                        Ok(Err(_)) => continue,
                        Err(_) => return Some((Err(timed_out()), Role::Follower)),
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    fn timed_out() -> Error {
        Error::timeout("waited too long")
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_callers_share_one_fetch() {
        let flights = Arc::new(SingleFlight::<u32>::new());
        let runs = Arc::new(AtomicUsize::new(0));
        let (release, released) = watch::channel(false);
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut tasks = Vec::new();
        for _ in 0..5 {
            let flights = flights.clone();
            let runs = runs.clone();
            let mut released = released.clone();
            tasks.push(tokio::spawn(async move {
                flights
                    .run(
                        "k",
                        deadline,
                        || async move {
                            runs.fetch_add(1, Ordering::SeqCst);
                            let _ = released.wait_for(|r| *r).await;
                            Ok(7)
                        },
                        timed_out,
                    )
                    .await
            }));
        }
        tokio::task::yield_now().await;
        assert!(flights.is_running("k"));
        release.send_replace(true);
        let mut leaders = 0;
        for task in tasks {
            let (result, role) = task.await.unwrap();
            assert_eq!(result.unwrap(), 7);
            leaders += usize::from(role == Role::Leader);
        }
        assert_eq!(leaders, 1);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert!(!flights.is_running("k"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_leader_hands_the_fetch_to_a_waiter() {
        let flights = Arc::new(SingleFlight::<u32>::new());
        let deadline = Instant::now() + Duration::from_secs(10);
        let stuck = {
            let flights = flights.clone();
            tokio::spawn(async move {
                flights
                    .run("k", deadline, std::future::pending, timed_out)
                    .await
            })
        };
        tokio::task::yield_now().await;
        let follower = {
            let flights = flights.clone();
            tokio::spawn(async move {
                flights
                    .run("k", deadline, || async { Ok(1) }, timed_out)
                    .await
            })
        };
        tokio::task::yield_now().await;
        stuck.abort();
        let (result, role) = follower.await.unwrap();
        assert_eq!(result.unwrap(), 1);
        assert_eq!(role, Role::Leader, "the waiter ran its own fetch");
    }

    #[tokio::test(start_paused = true)]
    async fn a_follower_gives_up_at_its_deadline() {
        let flights = Arc::new(SingleFlight::<u32>::new());
        let far = Instant::now() + Duration::from_secs(100);
        let _stuck = {
            let flights = flights.clone();
            tokio::spawn(
                async move { flights.run("k", far, std::future::pending, timed_out).await },
            )
        };
        tokio::task::yield_now().await;
        let started = Instant::now();
        let near = started + Duration::from_secs(3);
        let (result, role) = flights.run("k", near, || async { Ok(1) }, timed_out).await;
        assert_eq!(role, Role::Follower);
        assert_eq!(result.unwrap_err().kind(), mcp_core::ErrorKind::Timeout);
        assert_eq!(started.elapsed(), Duration::from_secs(3));
    }

    #[tokio::test(start_paused = true)]
    async fn a_claimed_flight_makes_later_callers_wait_for_its_finish() {
        let flights = Arc::new(SingleFlight::<u32>::new());
        let deadline = Instant::now() + Duration::from_secs(10);
        let claim = flights.lead("k").unwrap();
        assert!(flights.lead("k").is_none(), "the key is taken");
        let follower = {
            let flights = flights.clone();
            tokio::spawn(async move {
                flights
                    .run("k", deadline, || async { Ok(2) }, timed_out)
                    .await
            })
        };
        tokio::task::yield_now().await;
        claim.finish(Ok(1));
        let (result, role) = follower.await.unwrap();
        assert_eq!((result.unwrap(), role), (1, Role::Follower));
        assert!(!flights.is_running("k"));
    }

    #[tokio::test(start_paused = true)]
    async fn lead_when_free_waits_for_the_flight_under_way_or_its_deadline() {
        let flights = Arc::new(SingleFlight::<u32>::new());
        let deadline = Instant::now() + Duration::from_secs(10);
        let claim = flights.lead("k").unwrap();
        let waiter = {
            let flights = flights.clone();
            tokio::spawn(async move { flights.lead_when_free("k", deadline).await.is_some() })
        };
        tokio::task::yield_now().await;
        drop(claim);
        assert!(
            waiter.await.unwrap(),
            "claimed once the first claim was dropped"
        );

        let _held = flights.lead("k").unwrap();
        let started = Instant::now();
        let near = started + Duration::from_secs(3);
        assert!(flights.lead_when_free("k", near).await.is_none());
        assert_eq!(started.elapsed(), Duration::from_secs(3));
    }

    #[tokio::test(start_paused = true)]
    async fn a_caller_that_skips_claims_is_not_held_by_one_but_follows_a_run() {
        let flights = Arc::new(SingleFlight::<u32>::new());
        let deadline = Instant::now() + Duration::from_secs(10);
        let claim = flights.lead("k").unwrap();
        assert!(flights.is_running("k") && !flights.is_run_by_a_caller("k"));
        let skipped = flights
            .run_unless_claimed(
                "k",
                deadline,
                OnClaimed::Skip,
                || async { Ok(2) },
                timed_out,
            )
            .await;
        assert!(skipped.is_none(), "nothing run, nothing waited for");
        assert_eq!(Instant::now(), deadline - Duration::from_secs(10));
        drop(claim);

        let (release, mut released) = watch::channel(false);
        let running = {
            let flights = flights.clone();
            tokio::spawn(async move {
                flights
                    .run(
                        "k",
                        deadline,
                        || async move {
                            let _ = released.wait_for(|r| *r).await;
                            Ok(1)
                        },
                        timed_out,
                    )
                    .await
            })
        };
        tokio::task::yield_now().await;
        assert!(flights.is_run_by_a_caller("k"));
        let follower = {
            let flights = flights.clone();
            tokio::spawn(async move {
                flights
                    .run_unless_claimed(
                        "k",
                        deadline,
                        OnClaimed::Skip,
                        || async { Ok(2) },
                        timed_out,
                    )
                    .await
            })
        };
        tokio::task::yield_now().await;
        release.send_replace(true);
        let (result, role) = follower.await.unwrap().expect("a run is followed");
        assert_eq!((result.unwrap(), role), (1, Role::Follower));
        assert_eq!(running.await.unwrap().0.unwrap(), 1);
    }
}
