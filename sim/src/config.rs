//! Every bound and knob of a simulation, on one struct, with its default.

use serde::{Deserialize, Serialize};

/// Configuration of one simulated world. Every default is documented on its field.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SimConfig {
    /// Seed of the random Chooser. Default 0.
    pub seed: u64,
    /// Seed of the madsim runtime [`run`](crate::run) hosts the world on. It cannot
    /// change an outcome (actors run on the simulation's own executor, never as madsim
    /// tasks); tests vary it to prove that. Used only when built with `--cfg madsim`.
    /// Default: `seed`.
    pub madsim_seed: Option<u64>,
    /// Virtual time the server takes per request it applies, in microseconds. Default 100.
    pub request_time_us: u64,
    /// Default session timeout of new clients, in milliseconds. Default 6000.
    pub session_timeout_ms: u64,
    /// Delay before a disconnected client reconnects, in milliseconds. Default 200.
    pub reconnect_delay_ms: u64,
    /// Virtual time after which the run stops with [`SimError::TimeLimit`](crate::SimError).
    /// Default 3,600,000 (one hour).
    pub time_limit_ms: u64,
    /// World steps after which the run stops with [`SimError::StepLimit`](crate::SimError).
    /// Default 10,000,000.
    pub steps_max: u64,
    /// Largest number of clients a world accepts. Default 64.
    pub clients_max: usize,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            seed: 0,
            madsim_seed: None,
            request_time_us: 100,
            session_timeout_ms: 6000,
            reconnect_delay_ms: 200,
            time_limit_ms: 3_600_000,
            steps_max: 10_000_000,
            clients_max: 64,
        }
    }
}

impl SimConfig {
    /// The default configuration with this seed.
    pub fn with_seed(seed: u64) -> Self {
        Self {
            seed,
            ..Self::default()
        }
    }
}

/// Per-client settings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClientConfig {
    /// Negotiated session timeout, in milliseconds. `None`: the world's default.
    pub session_timeout_ms: Option<u64>,
}
