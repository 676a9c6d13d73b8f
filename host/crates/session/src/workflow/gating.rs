//! The phase/tool matrix applied to a session's code tool calls, and the
//! record of the calls that ran (the evidence every later check reads).

use super::*;

impl Workflow {

    /// Checks a code tool call against the phase/tool matrix. A refusal is
    /// recorded in the session's log and returned.
    ///
    /// # Errors
    /// Unknown session; store errors.
    pub fn gate_tool(&self, session_id: &str, tool: &str, params: &Value) -> Result<Result<Phase, Refusal>> {
        self.with_session(session_id, |conn, s| match matrix::check(s.phase, tool, params) {
            Ok(()) => Ok(Ok(s.phase)),
            Err(mut refusal) => {
                if s.phase == Phase::Exploration && s.frame.is_none() {
                    // submit_understanding needs the frame first.
                    refusal.next_allowed_step = format!("call set_query_frame(session_id, slots) first; then {}", refusal.next_allowed_step);
                }
                let reason = refusal.to_string();
                Self::insert_call(conn, s, tool, params, &ToolSummary::default(), Some(&reason))?;
                Ok(Err(refusal))
            }
        })
    }

    /// Records a code tool call that ran: its parameters and a summary of the
    /// files and symbols it returned. Returns the call id.
    ///
    /// # Errors
    /// Unknown session; store errors.
    pub fn record_tool_call(&self, session_id: &str, tool: &str, params: &Value, result: &Value) -> Result<i64> {
        let summary = summarize(params, result);
        self.with_session(session_id, |conn, s| Self::insert_call(conn, s, tool, params, &summary, None))
    }
}
