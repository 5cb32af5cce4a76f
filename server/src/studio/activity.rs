//! What an owner's workbench is doing: the step running, the phase its long search reports
//! and how far that is, for the page shown while a step takes longer than a moment.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use datafusion_anonymize::ProgressFn;

/// A step running on a workbench.
#[derive(Debug, Clone, PartialEq)]
pub struct Running {
    /// What the step does, in the steward's words.
    pub step: String,
    /// The last phase its search reported: name, done, total.
    pub phase: Option<Phase>,
    /// How long it has run.
    pub elapsed: Duration,
}

/// A search's phase: its name, steps done, steps in all.
type Phase = (String, usize, usize);

/// The activity of one workbench: the step running, its last phase, when it began.
#[derive(Debug, Default)]
pub struct Activity {
    state: Mutex<Option<(String, Option<Phase>, Instant)>>,
}

impl Activity {
    /// A step begins.
    pub fn start(&self, step: &str) {
        if let Ok(mut state) = self.state.lock() {
            *state = Some((step.to_string(), None, Instant::now()));
        }
    }

    /// The running step's search reports `done` of `total` in `phase`.
    pub fn report(&self, phase: &str, done: usize, total: usize) {
        if let Ok(mut state) = self.state.lock() {
            if let Some((_, last, _)) = state.as_mut() {
                *last = Some((phase.to_string(), done, total));
            }
        }
    }

    /// The step ended.
    pub fn finish(&self) {
        if let Ok(mut state) = self.state.lock() {
            *state = None;
        }
    }

    /// The step running now, if one is.
    pub fn now(&self) -> Option<Running> {
        let state = self.state.lock().ok()?;
        let (step, phase, started) = state.as_ref()?;
        Some(Running {
            step: step.clone(),
            phase: phase.clone(),
            elapsed: started.elapsed(),
        })
    }

    /// The progress callback of the workbench's session, reporting here.
    pub fn progress(self: &Arc<Self>) -> ProgressFn {
        let activity = Arc::downgrade(self);
        Arc::new(move |phase, done, total| {
            if let Some(activity) = activity.upgrade() {
                activity.report(phase, done, total);
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_reports_its_phase_until_it_ends() {
        let activity = Arc::new(Activity::default());
        let progress = activity.progress();
        progress("before any step", 1, 2);
        assert_eq!(activity.now(), None);
        activity.start("running the candidate's trial");
        progress("lattice", 3, 40);
        let running = activity.now().expect("running");
        assert_eq!(running.step, "running the candidate's trial");
        assert_eq!(running.phase, Some(("lattice".to_string(), 3, 40)));
        activity.finish();
        assert_eq!(activity.now(), None);
    }
}
