//! One request's exchange with the cluster, under the discipline in the client's
//! module docs: send a copy to the node that last answered for the group, resend the
//! same bytes on a timeout or a refusal (at once to a refusal's hinted primary, once
//! per replica), bind the session where a node says `Unbound`, and report, when the
//! budget ends, whether the cluster never took the request or may have.
//!
//! Each event (a timeout, a closed connection, a frame) is one step that updates the
//! [`Exchange`] and says whether the request is answered.

use std::ops::ControlFlow;

use tokio::time::Instant;

use super::connection::Inbound;
use super::{Client, Error, Flight, Refusal, Reply, Then, Wait};
use crate::metadata::{BIND_SESSION_CODE, BindSession, MetadataReply};
use crate::runtime::monotonic_now;
use crate::wire::{self, Command, FRAME_BYTES_MAX, HEADER_BYTES, Header};

/// What a step decided: keep waiting, or the request's result.
type Step = ControlFlow<Result<Reply, Error>>;

/// One request in flight and what its exchange has learned.
struct Exchange {
    group: u64,
    operation: u8,
    /// The request number.
    number: u64,
    /// The request's frame, the same bytes for every copy.
    request: Vec<u8>,
    flight: Flight,
    /// The node the next copy goes to.
    target: usize,
    /// Redirects to a refusal's hint, at most one per replica per request.
    redirects: usize,
    /// When the current target started refusing (not accepted) this request.
    refused_since: Option<Instant>,
    /// What the client waits for now.
    wait: Wait,
    /// No copy after this instant (see [`Client::request`]).
    cutoff: Instant,
    /// The end of the request's budget.
    budget_end: Instant,
}

impl Client {
    /// Send one request (`body` with `operation` to `group`) and wait for its answer
    /// under the discipline in the module docs. A reply is returned whatever its body
    /// says; the typed methods read it.
    pub async fn request(&mut self, group: u64, operation: u8, body: &[u8]) -> Result<Reply, Error> {
        if HEADER_BYTES + body.len() > FRAME_BYTES_MAX {
            return Err(Error::InvalidRequest(format!(
                "a body of {} bytes does not fit in a frame ({FRAME_BYTES_MAX} bytes with the header)",
                body.len()
            )));
        }
        let budget = self.config.request_budget;
        let mut exchange = self.start(group, operation, body).await;
        loop {
            let now = monotonic_now();
            if now >= exchange.budget_end || (now >= exchange.cutoff && !exchange.flight.maybe_taken()) {
                return Err(exchange.flight.exhausted(group, exchange.number, budget));
            }
            let until = exchange.wait.until.min(exchange.budget_end);
            let step = match tokio::time::timeout_at(until, self.inbox.recv()).await {
                Ok(Some(Inbound::Frame { node, frame })) => self.on_frame(&mut exchange, node, &frame).await,
                Ok(Some(Inbound::Closed {
                    node,
                    generation,
                    error,
                })) => {
                    let live = self.on_closed(node, generation, &error);
                    if live && node == exchange.target && exchange.wait.then == Then::NextNode {
                        // Lost while waiting for its answer: the same bytes to the next node.
                        exchange.flight.last = Some(format!("node {node}: connection lost: {error}"));
                        self.next_node(&mut exchange);
                        self.again(&mut exchange).await;
                    }
                    ControlFlow::Continue(())
                }
                Ok(None) => return Err(Error::InvalidRequest("the client's inbox closed".into())),
                Err(_) => {
                    self.on_timeout(&mut exchange).await;
                    ControlFlow::Continue(())
                }
            };
            if let ControlFlow::Break(result) = step {
                return result;
            }
        }
    }

    /// Number and seal the request, and send its first copy.
    async fn start(&mut self, group: u64, operation: u8, body: &[u8]) -> Exchange {
        let started = monotonic_now();
        let budget_end = started + self.config.request_budget;
        // No copy after this point: each copy gets its reply timeout to be answered
        // before the budget ends, so a request every node refused is reported as never
        // taken rather than as unknown because of a last copy still on the wire.
        let cutoff = budget_end
            .checked_sub(self.config.reply_timeout)
            .unwrap_or(started)
            .max(started);
        self.request_number += 1;
        let number = self.request_number;
        let header = self.request_header(group, operation, number);
        let request = wire::seal_header(header, body);
        self.stats.requests += 1;
        let nodes = self.nodes.len();
        let mut flight = Flight::new(nodes);
        let mut target = self.leaders.get(&group).copied().unwrap_or(self.current) % nodes;
        let wait = self.transmit(&mut target, &request, &mut flight).await;
        Exchange {
            group,
            operation,
            number,
            request,
            flight,
            target,
            redirects: 0,
            refused_since: None,
            wait,
            cutoff,
            budget_end,
        }
    }

    /// Move to the next node (its refusals start afresh).
    fn next_node(&self, exchange: &mut Exchange) {
        exchange.target = (exchange.target + 1) % self.nodes.len();
        exchange.refused_since = None;
    }

    /// Another copy to the target, unless the send cutoff has passed (`again_or_wait`).
    async fn again(&mut self, exchange: &mut Exchange) {
        let Exchange {
            target,
            request,
            flight,
            cutoff,
            budget_end,
            ..
        } = exchange;
        exchange.wait = self.again_or_wait(target, request, flight, *cutoff, *budget_end).await;
    }

    /// A pause of one resend interval, then the same target again.
    fn pause(&self, exchange: &mut Exchange) {
        exchange.wait = Wait {
            until: monotonic_now() + self.config.resend_interval,
            then: Then::Resend,
        };
    }

    /// The wait ended: a silent node is passed over; then another copy.
    async fn on_timeout(&mut self, exchange: &mut Exchange) {
        if monotonic_now() >= exchange.budget_end {
            return;
        }
        if exchange.wait.then == Then::NextNode {
            self.stats.timeouts += 1;
            exchange.flight.last = Some(format!(
                "node {}: no answer within {} ms",
                exchange.target,
                self.config.reply_timeout.as_millis()
            ));
            self.next_node(exchange);
        }
        self.again(exchange).await;
    }

    /// A frame from `node`: an answer to this request, a refusal of it, or something
    /// stale or foreign (counted and dropped).
    async fn on_frame(&mut self, exchange: &mut Exchange, node: usize, frame: &[u8]) -> Step {
        let Ok((reply, reply_body)) = wire::open(frame) else {
            self.stats.frames_rejected += 1;
            return ControlFlow::Continue(());
        };
        if reply.client != self.id || reply.request > exchange.number || node >= self.nodes.len() {
            self.stats.frames_rejected += 1;
            return ControlFlow::Continue(());
        }
        if reply.request < exchange.number {
            self.stats.replies_stale += 1;
            return ControlFlow::Continue(());
        }
        let about_bind = reply.operation == BIND_SESSION_CODE && exchange.operation != BIND_SESSION_CODE;
        if !about_bind && (reply.group != exchange.group || reply.operation != exchange.operation) {
            self.stats.frames_rejected += 1;
            return ControlFlow::Continue(());
        }
        match reply.command {
            Command::Reply if about_bind => self.on_bind_reply(exchange, node, &reply, reply_body).await,
            Command::Reply => {
                if self.leaders.len() >= super::LEADERS_MAX {
                    self.leaders.clear();
                }
                self.leaders.insert(exchange.group, node);
                self.current = node;
                self.stats.replies += 1;
                self.observe(exchange.operation, &reply, reply_body);
                ControlFlow::Break(Ok(Reply {
                    header: reply,
                    body: reply_body.to_vec(),
                    node,
                }))
            }
            Command::Refused => {
                let Some(error) = Refusal::decode(reply_body) else {
                    self.stats.frames_rejected += 1;
                    return ControlFlow::Continue(());
                };
                if about_bind {
                    // The bind waited too long for the node's metadata: the request
                    // again after a pause (it is refused Unbound, and binds again).
                    exchange.flight.last = Some(format!("node {node}: session bind refused as {error:?}"));
                    if node == exchange.target {
                        self.pause(exchange);
                    }
                    return ControlFlow::Continue(());
                }
                self.on_refusal(exchange, node, error, usize::from(reply.flags)).await
            }
            _ => {
                self.stats.frames_rejected += 1;
                ControlFlow::Continue(())
            }
        }
    }

    /// The answer to the `BindSession` this request sent after an `Unbound`.
    async fn on_bind_reply(&mut self, exchange: &mut Exchange, node: usize, reply: &Header, body: &[u8]) -> Step {
        self.newest_metadata_op = self.newest_metadata_op.max(reply.commit);
        match MetadataReply::decode(body) {
            Ok(MetadataReply::SessionBound { .. }) => {
                // Bound there: the same request bytes again, at once.
                exchange.target = node;
                self.again(exchange).await;
            }
            Ok(MetadataReply::SessionRefused) => {
                self.stats.binds_refused += 1;
                self.session = None;
                return ControlFlow::Break(Err(Error::Unauthenticated {
                    group: exchange.group,
                    node: Some(node),
                    why: "the node refused to bind the session (closed, or replaced by a newer login)",
                }));
            }
            _ => self.stats.frames_rejected += 1,
        }
        ControlFlow::Continue(())
    }

    /// A refusal of this request by `node`, naming `hint` as the primary it knows.
    async fn on_refusal(&mut self, exchange: &mut Exchange, node: usize, error: Refusal, hint: usize) -> Step {
        let group = exchange.group;
        match error {
            Refusal::PermissionDenied => {
                self.stats.denied += 1;
                ControlFlow::Break(Err(Error::PermissionDenied { group, node }))
            }
            Refusal::Unauthenticated => {
                self.stats.denied += 1;
                ControlFlow::Break(Err(Error::Unauthenticated {
                    group,
                    node: Some(node),
                    why: "the session's user was deleted or deactivated",
                }))
            }
            Refusal::TransientNotCommitted => {
                self.stats.not_committed += 1;
                exchange.flight.not_committed = true;
                exchange.flight.last = Some(format!("node {node}: taken but not committed (view change)"));
                if node == exchange.target {
                    if hint < self.nodes.len() {
                        exchange.target = hint;
                    }
                    exchange.refused_since = None;
                    self.pause(exchange);
                }
                ControlFlow::Continue(())
            }
            Refusal::Malformed => ControlFlow::Break(Err(Error::Malformed { group, node })),
            Refusal::Throttled => ControlFlow::Break(Err(Error::Throttled { node })),
            Refusal::Unbound => self.bind(exchange, node).await,
            Refusal::TransientNotAccepted => {
                self.not_accepted(exchange, node, hint).await;
                ControlFlow::Continue(())
            }
        }
    }

    /// `Unbound`: bind the client's session on the node that refused (when it is the
    /// target), or, never logged in, give up as `Unauthenticated`.
    async fn bind(&mut self, exchange: &mut Exchange, node: usize) -> Step {
        self.stats.unbound += 1;
        exchange.flight.refused[node] += 1;
        let Some(session) = self.session else {
            return ControlFlow::Break(Err(Error::Unauthenticated {
                group: exchange.group,
                node: Some(node),
                why: "not logged in",
            }));
        };
        if node != exchange.target {
            return ControlFlow::Continue(());
        }
        let mut bind = self.request_header(0, BIND_SESSION_CODE, exchange.number);
        bind.context = 0;
        let bind = wire::seal_header(
            bind,
            &BindSession {
                session: session.session,
                secret: session.secret,
            }
            .encode(),
        );
        self.stats.binds += 1;
        exchange.wait = match self.write_to(node, &bind, false).await {
            Ok(()) => Wait {
                until: monotonic_now() + self.config.reply_timeout,
                then: Then::NextNode,
            },
            Err(error) => {
                exchange.flight.last = Some(format!("node {node}: {error}"));
                exchange.target = (exchange.target + 1) % self.nodes.len();
                Wait {
                    until: monotonic_now() + self.config.resend_interval,
                    then: Then::Resend,
                }
            }
        };
        ControlFlow::Continue(())
    }

    /// `TransientNotAccepted` (never taken): go to the hinted primary at once (once
    /// per replica), or retry the same node after a pause, moving on once it has
    /// refused for the node refusal window.
    async fn not_accepted(&mut self, exchange: &mut Exchange, node: usize, hint: usize) {
        let nodes = self.nodes.len();
        self.stats.refusals += 1;
        exchange.flight.refused[node] += 1;
        exchange.flight.last = Some(format!(
            "node {node}: not accepted (it takes replica {hint} for the primary)"
        ));
        if node != exchange.target {
            return;
        }
        if hint < nodes && hint != exchange.target && exchange.redirects < nodes {
            // Never taken, and the refuser names another primary: go there now rather
            // than after a pause.
            exchange.redirects += 1;
            self.stats.redirects += 1;
            exchange.target = hint;
            exchange.refused_since = None;
            self.again(exchange).await;
            return;
        }
        let now = monotonic_now();
        let since = *exchange.refused_since.get_or_insert(now);
        if now.duration_since(since) >= self.config.node_refusal_window {
            self.stats.moves += 1;
            self.next_node(exchange);
        }
        exchange.wait = Wait {
            until: now + self.config.resend_interval,
            then: Then::Resend,
        };
    }
}
