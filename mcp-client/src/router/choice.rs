//! The routing decision: which endpoint of a server should carry its calls — one small
//! function of what is known about each endpoint ([`RoutingPolicy::choose`]), tested on its own.
//!
//! 1. Only usable endpoints are chosen (not known to be down, breaker not open).
//! 2. The client's region first: an endpoint in it beats every endpoint outside it.
//! 3. Within a region tier, the lowest smoothed probe latency; unknown latencies after known
//!    ones; ties by configuration order.
//! 4. Hysteresis: while the current endpoint is usable, traffic moves within its tier only to
//!    an endpoint whose latency is clearly lower ([`RoutingPolicy::move_threshold`], both
//!    latencies over at least [`RoutingPolicy::min_samples`] probes), so two close endpoints
//!    never flap; and it moves only to a *settled* endpoint — one that never failed, or that has
//!    answered its probes for the failback period since it last failed.

use std::cmp::Ordering;
use std::time::Duration;

/// How the router weighs a server's endpoints (the failback period is per server:
/// `failback_after_sec` in its configuration entry).
#[derive(Debug, Clone, PartialEq)]
pub struct RoutingPolicy {
    /// How much lower (as a fraction) another endpoint's smoothed latency must be before
    /// traffic moves to it within the same region tier. Default 0.25: 25 % lower.
    pub move_threshold: f64,
    /// Probe samples each of two endpoints needs before their latencies can justify a move.
    /// Default 3.
    pub min_samples: u64,
}

impl Default for RoutingPolicy {
    fn default() -> Self {
        RoutingPolicy {
            move_threshold: 0.25,
            min_samples: 3,
        }
    }
}

impl RoutingPolicy {
    /// The decision: which of `candidates` (a server's endpoints, in configuration order)
    /// should carry the calls, given the `current` one — `current` itself when nothing is
    /// clearly better, `None` when none is usable: usable endpoints only; the client's region first;
    /// then the lowest latency (unknown last), ties by configuration order; and while the current
    /// endpoint is usable, a move within its tier only to a settled endpoint whose latency is
    /// [`move_threshold`](Self::move_threshold) lower over [`min_samples`](Self::min_samples).
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_client::{RouteCandidate, RoutingPolicy};
    ///
    /// let ms = |n| Some(Duration::from_millis(n));
    /// let home = RouteCandidate { usable: true, settled: true, local: true, latency: ms(80) };
    /// let away = RouteCandidate { usable: true, settled: true, local: false, latency: ms(5) };
    /// let policy = RoutingPolicy::default();
    /// // The client's region wins over a faster endpoint elsewhere …
    /// assert_eq!(policy.choose(&[away, home], None), Some(1));
    /// // … until it is down.
    /// let down = RouteCandidate { usable: false, ..home };
    /// assert_eq!(policy.choose(&[away, down], Some(1)), Some(0));
    /// ```
    pub fn choose(&self, candidates: &[RouteCandidate], current: Option<usize>) -> Option<usize> {
        choose(candidates, current, self)
    }
}

/// What the decision knows about one endpoint.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RouteCandidate {
    /// It may take calls: not known to be down, its breaker not open.
    pub usable: bool,
    /// It never failed, or it has answered its probes for the failback period since.
    pub settled: bool,
    /// In the client's region (every endpoint is when the client has none).
    pub local: bool,
    /// The smoothed probe latency, once it holds [`RoutingPolicy::min_samples`] samples.
    pub latency: Option<Duration>,
}

impl RouteCandidate {
    /// Orders two endpoints of the same standing: region tier, then known latency (lower
    /// first), then configuration order (the index).
    fn rank(&self, index: usize, other: &RouteCandidate, other_index: usize) -> Ordering {
        other
            .local
            .cmp(&self.local)
            .then_with(|| match (self.latency, other.latency) {
                (Some(a), Some(b)) => a.cmp(&b),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            })
            .then(index.cmp(&other_index))
    }
}

/// The endpoint that should carry the calls, given the `current` one (if any): `current`
/// itself when nothing is clearly better, `None` when no endpoint is usable.
pub(crate) fn choose(
    candidates: &[RouteCandidate],
    current: Option<usize>,
    policy: &RoutingPolicy,
) -> Option<usize> {
    let best_of = |eligible: &dyn Fn(&RouteCandidate) -> bool| {
        candidates
            .iter()
            .enumerate()
            .filter(|(_, c)| eligible(c))
            .min_by(|(i, a), (j, b)| a.rank(*i, b, *j))
            .map(|(i, _)| i)
    };
    match current.and_then(|i| candidates.get(i).map(|c| (i, c))) {
        Some((index, now)) if now.usable => {
            let Some(best) = best_of(&|c| c.usable && c.settled) else {
                return Some(index);
            };
            let better = &candidates[best];
            let moves = best != index
                && (better.local && !now.local
                    || better.local == now.local && clearly_faster(better, now, policy));
            Some(if moves { best } else { index })
        }
        // Nowhere to stay: the best usable endpoint, settled ones first.
        _ => best_of(&|c| c.usable && c.settled).or_else(|| best_of(&|c| c.usable)),
    }
}

/// Whether `better`'s latency is at least the threshold lower than `now`'s (both known).
fn clearly_faster(better: &RouteCandidate, now: &RouteCandidate, policy: &RoutingPolicy) -> bool {
    match (better.latency, now.latency) {
        (Some(fast), Some(slow)) => {
            fast.as_secs_f64() <= slow.as_secs_f64() * (1.0 - policy.move_threshold)
        }
        _ => false,
    }
}

/// The order in which to try endpoints when a session must be opened somewhere: the chosen
/// endpoint first, then usable ones (settled first) by rank, then the rest (an endpoint that
/// failed is still worth a try when nothing else answers) — `avoid` (the endpoint being left)
/// never.
pub(crate) fn connect_order(
    candidates: &[RouteCandidate],
    chosen: Option<usize>,
    avoid: Option<usize>,
) -> Vec<usize> {
    let standing = |c: &RouteCandidate| (!c.usable, !c.settled);
    let mut order: Vec<usize> = (0..candidates.len())
        .filter(|&i| Some(i) != avoid)
        .collect();
    order.sort_by(|&i, &j| {
        let (a, b) = (&candidates[i], &candidates[j]);
        (Some(j) == chosen)
            .cmp(&(Some(i) == chosen))
            .then_with(|| standing(a).cmp(&standing(b)))
            .then_with(|| a.rank(i, b, j))
    });
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Option<Duration> {
        Some(Duration::from_millis(n))
    }

    fn up(local: bool, latency: Option<Duration>) -> RouteCandidate {
        RouteCandidate {
            usable: true,
            settled: true,
            local,
            latency,
        }
    }

    fn down(local: bool) -> RouteCandidate {
        RouteCandidate {
            usable: false,
            settled: false,
            local,
            latency: None,
        }
    }

    fn recovering(local: bool, latency: Option<Duration>) -> RouteCandidate {
        RouteCandidate {
            settled: false,
            ..up(local, latency)
        }
    }

    fn choose_default(c: &[RouteCandidate], current: Option<usize>) -> Option<usize> {
        choose(c, current, &RoutingPolicy::default())
    }

    #[test]
    fn the_clients_region_wins_over_a_faster_remote_endpoint() {
        let c = [up(false, ms(5)), up(true, ms(80)), up(false, ms(1))];
        assert_eq!(choose_default(&c, None), Some(1));
        // And traffic on a remote endpoint moves home.
        assert_eq!(choose_default(&c, Some(2)), Some(1));
        // But never away from home to a faster remote one.
        assert_eq!(choose_default(&c, Some(1)), Some(1));
    }

    #[test]
    fn the_lowest_latency_wins_inside_a_tier_and_ties_go_by_config_order() {
        let c = [up(true, ms(40)), up(true, ms(10)), up(true, ms(20))];
        assert_eq!(choose_default(&c, None), Some(1));
        let unknown = [up(true, None), up(true, None), up(true, None)];
        assert_eq!(choose_default(&unknown, None), Some(0));
        let tie = [up(true, ms(10)), up(true, ms(10))];
        assert_eq!(choose_default(&tie, None), Some(0));
        // A known latency ranks before an unknown one.
        let some = [up(true, None), up(true, ms(50))];
        assert_eq!(choose_default(&some, None), Some(1));
    }

    #[test]
    fn hysteresis_keeps_close_endpoints_from_flapping() {
        // 5 % apart: stay, whichever is current.
        let c = [up(true, ms(100)), up(true, ms(95))];
        assert_eq!(choose_default(&c, Some(0)), Some(0));
        assert_eq!(choose_default(&c, Some(1)), Some(1));
        // 24 % lower: still not clearly better.
        let c = [up(true, ms(100)), up(true, ms(76))];
        assert_eq!(choose_default(&c, Some(0)), Some(0));
        // 25 % lower: move.
        let c = [up(true, ms(100)), up(true, ms(75))];
        assert_eq!(choose_default(&c, Some(0)), Some(1));
        // Too few samples on either side (no latency yet): stay.
        let c = [up(true, None), up(true, ms(1))];
        assert_eq!(choose_default(&c, Some(0)), Some(0));
        let c = [up(true, ms(100)), up(true, None)];
        assert_eq!(choose_default(&c, Some(0)), Some(0));
    }

    #[test]
    fn an_unusable_current_endpoint_is_left_for_the_best_usable_one() {
        let c = [down(true), up(false, ms(30)), up(false, ms(10))];
        assert_eq!(choose_default(&c, Some(0)), Some(2));
        // In its own region first, even when remote ones are faster.
        let c = [down(true), up(false, ms(1)), up(true, ms(90))];
        assert_eq!(choose_default(&c, Some(0)), Some(2));
        // Nothing usable: nowhere.
        let c = [down(true), down(false)];
        assert_eq!(choose_default(&c, Some(0)), None);
        assert_eq!(choose_default(&c, None), None);
    }

    #[test]
    fn failback_waits_until_the_preferred_endpoint_has_settled() {
        // The home endpoint answers probes again but not yet for the failback period.
        let c = [recovering(true, ms(5)), up(false, ms(50))];
        assert_eq!(choose_default(&c, Some(1)), Some(1));
        // Once settled, traffic goes home.
        let c = [up(true, ms(5)), up(false, ms(50))];
        assert_eq!(choose_default(&c, Some(1)), Some(0));
        // A recovering endpoint is not a latency target either.
        let c = [up(true, ms(100)), recovering(true, ms(10))];
        assert_eq!(choose_default(&c, Some(0)), Some(0));
        // But when nothing settled is usable, a recovering endpoint beats nothing.
        let c = [down(true), recovering(false, ms(10))];
        assert_eq!(choose_default(&c, Some(0)), Some(1));
        // Settled ones first when the current endpoint is gone.
        let c = [down(true), recovering(true, ms(1)), up(false, ms(60))];
        assert_eq!(choose_default(&c, Some(0)), Some(2));
    }

    #[test]
    fn the_threshold_is_the_policys() {
        let policy = RoutingPolicy {
            move_threshold: 0.5,
            min_samples: 3,
        };
        let c = [up(true, ms(100)), up(true, ms(60))];
        assert_eq!(choose(&c, Some(0), &policy), Some(0));
        let c = [up(true, ms(100)), up(true, ms(50))];
        assert_eq!(choose(&c, Some(0), &policy), Some(1));
    }

    #[test]
    fn connect_order_puts_the_choice_first_then_usable_ones_and_never_the_one_left() {
        let c = [
            up(true, ms(50)),
            down(true),
            up(false, ms(5)),
            recovering(true, ms(1)),
            up(true, ms(10)),
        ];
        assert_eq!(connect_order(&c, Some(2), None), vec![2, 4, 0, 3, 1]);
        assert_eq!(connect_order(&c, Some(4), Some(0)), vec![4, 2, 3, 1]);
        assert_eq!(connect_order(&c, None, Some(4)), vec![0, 2, 3, 1]);
    }

    #[test]
    fn a_current_index_out_of_range_is_no_current_endpoint() {
        let c = [up(true, ms(10))];
        assert_eq!(choose_default(&c, Some(7)), Some(0));
        assert_eq!(choose_default(&[], None), None);
        assert!(connect_order(&[], None, None).is_empty());
    }
}
