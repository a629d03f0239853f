//! `RequestAsUser`: log in as one of the client's users, make one request as that user,
//! then log back in as root. The request is a stream create (a metadata op, refused
//! when applied), a send or a poll (partition requests, refused by the node before
//! anything is prepared); it succeeds only if the user holds the permission.
//!
//! What it checks: that every request is authorised as its session's user, on both
//! planes, and that a session survives the rebinding a login forces on every node (the
//! middle request reaches nodes that bound the client's previous session).

use cluster::metadata::MetadataOp;
use cluster::partition::PartitionOp;

use super::{create_stream, login_user, poll_messages, send_messages};
use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::{Shadow, ShadowAccess};

/// The action's name.
pub const NAME: &str = "RequestAsUser";

/// Outcomes it can produce: its reason to exist first, then what a permitted request
/// answers (a create may find its name taken or the stream limit reached when other
/// clients create too).
pub const OUTCOMES: &[Outcome] = outcomes!(PermissionDenied, Ok, Appended, Polled, PolledNothing, LimitReached);

/// Which request the middle step makes.
#[derive(Clone, Copy)]
enum Middle {
    CreateStream,
    Send,
    Poll,
}

/// `PermissionDenied`: a user of the client's lacking what the drawn request needs;
/// the other aims: a user holding it, with the request drawn for that outcome.
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let middle = match rng.below(3) {
        0 => Middle::CreateStream,
        1 => Middle::Send,
        _ => Middle::Poll,
    };
    let (request, allowed_aim) = match middle {
        Middle::CreateStream if matches!(aim, Outcome::PermissionDenied | Outcome::Ok) => {
            (first(create_stream::generate(scope, rng, Outcome::Ok)?)?, Outcome::Ok)
        }
        Middle::Send if matches!(aim, Outcome::PermissionDenied | Outcome::Appended) => {
            (first(send_messages::generate(scope, rng, Outcome::Appended)?)?, Outcome::Appended)
        }
        Middle::Poll if matches!(aim, Outcome::PermissionDenied | Outcome::Polled | Outcome::PolledNothing) => {
            let polled = if aim == Outcome::PermissionDenied { Outcome::PolledNothing } else { aim };
            (first(poll_messages::generate(scope, rng, polled)?)?, polled)
        }
        _ => return None,
    };
    let need = need_of(&request)?;
    let denied = aim == Outcome::PermissionDenied;
    let user_id = scope.pick_user_where(rng, |id, user| user.active && need.granted_by(id, &user.permissions) != denied)?;
    debug_assert!(denied || aim == allowed_aim);
    let user = &scope.shadow.users[&user_id];
    let login = MetadataOp::LoginUser {
        username: user.username.clone(),
        password: user.password.clone(),
    };
    Some(Plan::aimed_at(
        vec![login.into(), request, login_user::as_root(scope.shadow)],
        1,
    ))
}

/// The one request of a single-step plan.
fn first(plan: Plan) -> Option<Request> {
    plan.steps.into_iter().next()
}

/// What the middle request needs; `None` for a request this action never draws.
fn need_of(request: &Request) -> Option<ShadowAccess> {
    match request {
        Request::Metadata(MetadataOp::CreateStream { .. }) => Some(ShadowAccess::ManageStreams),
        Request::Partition {
            at,
            op: PartitionOp::SendMessages { .. },
        } => Some(ShadowAccess::WriteStream(at.stream_id)),
        Request::Poll { at, .. } => Some(ShadowAccess::ReadStream(at.stream_id)),
        _ => None,
    }
}

/// Logins as `LoginUser` predicts them; the middle request `PermissionDenied` unless
/// the client's session (the user the first login made it) holds what it needs, and
/// then what the request's own action predicts.
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    if let Request::Metadata(MetadataOp::LoginUser { .. }) = request {
        return login_user::predict(scope, request);
    }
    let Some(need) = need_of(request) else {
        super::wrong_op(NAME, request)
    };
    if !scope.shadow.session_may(scope.client, need) {
        return Outcome::PermissionDenied.into();
    }
    match request {
        Request::Metadata(_) => create_stream::predict(scope, request),
        Request::Partition { .. } => send_messages::predict(scope, request),
        _ => poll_messages::predict(scope, request),
    }
}

/// Each step as its own action observes it (a refusal never reaches here).
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    match answered.request {
        Request::Metadata(MetadataOp::LoginUser { .. }) => login_user::observe(shadow, answered),
        Request::Metadata(MetadataOp::CreateStream { .. }) => create_stream::observe(shadow, answered),
        Request::Partition { .. } => send_messages::observe(shadow, answered),
        Request::Poll { .. } => poll_messages::observe(shadow, answered),
        other => super::wrong_op(NAME, other),
    }
}
