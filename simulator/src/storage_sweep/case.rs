//! One case of a sweep: where the fault lands, which fault, which crash, writeback on or off.

use std::fmt;
use std::str::FromStr;

use super::{CrashKind, FaultKind};

/// What happens at the case's trace position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaseFault {
    /// The operation completes normally; the process dies right after it.
    None,
    /// The operation is faulted this way; the process dies right after it.
    Fault(FaultKind),
}

impl CaseFault {
    /// Every fault a case can plan, in sweep order.
    pub fn all() -> [CaseFault; 5] {
        [
            CaseFault::None,
            CaseFault::Fault(FaultKind::FailBefore),
            CaseFault::Fault(FaultKind::FailAfter),
            CaseFault::Fault(FaultKind::TornWithError),
            CaseFault::Fault(FaultKind::TornSilent),
        ]
    }

    /// The name used in case specs.
    pub fn name(self) -> &'static str {
        match self {
            CaseFault::None => "none",
            CaseFault::Fault(kind) => kind.name(),
        }
    }
}

/// One case: `position:fault:crash:writeback`, e.g. `17:torn-silent:power-loss:on`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Case {
    /// Trace position of the faulted operation; the process halts right after it.
    pub position: u64,
    /// What happens to that operation.
    pub fault: CaseFault,
    /// How the process goes down.
    pub crash: CrashKind,
    /// Whether background writeback flushes dirty pages (in any order) meanwhile.
    pub writeback: bool,
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let writeback = if self.writeback { "on" } else { "off" };
        write!(
            f,
            "{}:{}:{}:{writeback}",
            self.position,
            self.fault.name(),
            self.crash.name()
        )
    }
}

/// A case spec that does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseParseError(pub String);

impl fmt::Display for CaseParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}; a case is POSITION:FAULT:CRASH:WRITEBACK with FAULT one of none, fail-before, fail-after, \
             torn-error, torn-silent, CRASH one of process, power-loss, WRITEBACK on or off \
             (e.g. 17:torn-silent:power-loss:on)",
            self.0
        )
    }
}

impl std::error::Error for CaseParseError {}

impl FromStr for Case {
    type Err = CaseParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = text.split(':').collect();
        let [position, fault, crash, writeback] = parts.as_slice() else {
            return Err(CaseParseError(format!(
                "case {text:?} does not have four ':'-separated parts"
            )));
        };
        let position = position
            .parse::<u64>()
            .map_err(|_| CaseParseError(format!("position {position:?} is not a number")))?;
        let fault = match *fault {
            "none" => CaseFault::None,
            other => CaseFault::Fault(
                other
                    .parse::<FaultKind>()
                    .map_err(|_| CaseParseError(format!("fault {other:?} is not known")))?,
            ),
        };
        let crash = crash
            .parse::<CrashKind>()
            .map_err(|_| CaseParseError(format!("crash {crash:?} is not known")))?;
        let writeback = match *writeback {
            "on" => true,
            "off" => false,
            other => return Err(CaseParseError(format!("writeback {other:?} is neither on nor off"))),
        };
        Ok(Case {
            position,
            fault,
            crash,
            writeback,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_prints_as_the_spec_that_parses_back_to_it() {
        for fault in CaseFault::all() {
            for crash in CrashKind::ALL {
                for writeback in [false, true] {
                    let case = Case {
                        position: 17,
                        fault,
                        crash,
                        writeback,
                    };
                    assert_eq!(case.to_string().parse::<Case>(), Ok(case));
                }
            }
        }
    }

    #[test]
    fn a_malformed_case_names_the_bad_part() {
        let error = "17:torn:power-loss:on".parse::<Case>().expect_err("bad fault");
        assert!(error.to_string().contains("fault \"torn\""), "{error}");
        let error = "x:none:process:on".parse::<Case>().expect_err("bad position");
        assert!(error.to_string().contains("position \"x\""), "{error}");
        assert!("1:none:process".parse::<Case>().is_err());
    }
}
