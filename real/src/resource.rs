//! The shared resource a real run's critical sections read and write, kept in process and
//! modelled twice, as in zklock's simulation: fenced (it rejects a token lower than the
//! highest it has seen) and unfenced (it takes every write).
//!
//! A critical section reads both values, then writes value + 1 with its fencing token. A
//! write that finds the value changed since its read clobbers an update it never saw: a
//! lost update. The checker reads the outcome from the history, so the resource itself is a
//! plain state machine; [`Recorder`](crate::recorder::Recorder) applies each operation and
//! records it under one lock, so the history shows the resource's own order.

/// Both values, as a read saw them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResourceRead {
    pub fenced: u64,
    pub unfenced: u64,
}

/// What a write did to each side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteOutcome {
    /// The value the write carried (the fenced value it read, plus one).
    pub value: u64,
    /// The fenced side took the write: its token was not lower than the highest seen.
    pub fenced_accepted: bool,
    /// The fenced side took it although its value changed since the writer read it.
    pub fenced_lost_update: bool,
    /// The unfenced side's value changed since the writer read it: this write clobbered an
    /// update the writer never saw.
    pub unfenced_overwrote: bool,
}

/// The fenced and the unfenced resource.
#[derive(Clone, Debug)]
pub struct Resource {
    fenced: u64,
    unfenced: u64,
    max_token: i64,
}

impl Default for Resource {
    fn default() -> Self {
        Resource {
            fenced: 0,
            unfenced: 0,
            max_token: i64::MIN,
        }
    }
}

impl Resource {
    /// Reads both values with `token`, which the fenced value learns: a later write with a
    /// lower token is a stale holder's and is rejected, as the simulation's resource does.
    pub fn read(&mut self, token: i64) -> ResourceRead {
        self.max_token = self.max_token.max(token);
        ResourceRead {
            fenced: self.fenced,
            unfenced: self.unfenced,
        }
    }

    /// Writes the values `read` saw plus one, with `token`.
    pub fn write(&mut self, token: i64, read: ResourceRead) -> WriteOutcome {
        let unfenced_overwrote = self.unfenced != read.unfenced;
        self.unfenced = read.unfenced + 1;
        // Equal tokens pass: a holder may write more than once in one hold.
        let fenced_accepted = token >= self.max_token;
        let mut fenced_lost_update = false;
        if fenced_accepted {
            fenced_lost_update = self.fenced != read.fenced;
            self.fenced = read.fenced + 1;
            self.max_token = token;
        }
        WriteOutcome {
            value: read.fenced + 1,
            fenced_accepted,
            fenced_lost_update,
            unfenced_overwrote,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_writes_in_token_order_lose_nothing() {
        let mut r = Resource::default();
        for token in [5, 9, 9, 12] {
            let read = r.read(token);
            let out = r.write(token, read);
            assert!(out.fenced_accepted && !out.fenced_lost_update && !out.unfenced_overwrote);
        }
        assert_eq!(
            r.read(12),
            ResourceRead {
                fenced: 4,
                unfenced: 4
            }
        );
    }

    /// Seed 74368 of the default sweep: holder 177 read, then stale holder 155 (paused
    /// through its session's expiry) wrote, then 177 wrote over it. Tokens checked on
    /// writes alone accepted both, and 177's write lost 155's update; the read of 177
    /// must fence 155 off.
    #[test]
    fn a_stale_write_between_a_new_holders_read_and_write_is_fenced_off() {
        let mut r = Resource::default();
        let fresh = r.read(177);
        let stale = r.write(155, ResourceRead::default());
        assert!(!stale.fenced_accepted, "token 155 < 177, seen by the read");
        let out = r.write(177, fresh);
        assert!(out.fenced_accepted && !out.fenced_lost_update);
        assert!(
            out.unfenced_overwrote,
            "the unfenced side lost 155's update"
        );
    }

    #[test]
    fn a_stale_holder_is_fenced_off_but_clobbers_the_unfenced_side() {
        let mut r = Resource::default();
        // Holder 10 reads, stalls; holder 11 reads and writes; holder 10 writes late.
        let stale = r.read(10);
        let fresh = r.read(11);
        assert!(r.write(11, fresh).fenced_accepted);
        let late = r.write(10, stale);
        assert!(!late.fenced_accepted, "token 10 < 11 is rejected");
        assert!(
            late.unfenced_overwrote,
            "the unfenced side lost holder 11's update"
        );
        assert_eq!(
            r.read(11),
            ResourceRead {
                fenced: 1,
                unfenced: 1
            }
        );
    }

    #[test]
    fn overlapping_holders_with_one_token_lose_a_fenced_update() {
        let mut r = Resource::default();
        let a = r.read(1);
        let b = r.read(1);
        assert!(!r.write(1, a).fenced_lost_update);
        let second = r.write(1, b);
        assert!(second.fenced_accepted && second.fenced_lost_update);
    }
}
