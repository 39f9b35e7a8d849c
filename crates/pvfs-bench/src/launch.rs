//! Which engine does a run's I/O and which launcher starts it, as the user names them (the
//! cluster file's `[bench]`, `pvfsctl bench --engine/--launcher`), and the one function that
//! says what a pair runs — or why it cannot run. Pure names and rules: the engine crate maps
//! a [`Runner`] onto what it starts, and the config and the CLI word their own messages from a
//! [`PairError`], so neither keeps its own copy of the rule.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What does the I/O, as the user names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// pvfs's own IOR/mdtest engine, in the agent or as MPI ranks.
    #[default]
    Builtin,
    /// fio on each client (IOR-style presets only).
    Fio,
    /// IOR (or mdtest) itself, under mpirun.
    Ior,
    /// The real io500 (`[bench] io500 = PATH`), under mpirun: the io500 presets only.
    Io500,
}

impl Engine {
    pub const ALL: [Engine; 4] = [Engine::Builtin, Engine::Fio, Engine::Ior, Engine::Io500];

    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Builtin => "builtin",
            Engine::Fio => "fio",
            Engine::Ior => "ior",
            Engine::Io500 => "io500",
        }
    }

    /// `None` for a name that is no engine: each caller says so in its own words (the config
    /// at the value's position, the CLI in its usage error).
    pub fn parse(name: &str) -> Option<Engine> {
        Engine::ALL.into_iter().find(|e| e.as_str() == name)
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the run's processes are started on the clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Launcher {
    /// Each client's agent starts its share.
    #[default]
    Agents,
    /// mpirun on the first client starts every task.
    Mpi,
}

impl Launcher {
    pub const ALL: [Launcher; 2] = [Launcher::Agents, Launcher::Mpi];

    pub fn as_str(self) -> &'static str {
        match self {
            Launcher::Agents => "agents",
            Launcher::Mpi => "mpi",
        }
    }

    /// `None` for a name that is no launcher (see [`Engine::parse`]).
    pub fn parse(name: &str) -> Option<Launcher> {
        Launcher::ALL.into_iter().find(|l| l.as_str() == name)
    }
}

impl fmt::Display for Launcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A valid (engine, launcher) pair: what a run runs, carried from the cluster file (or the
/// flags) through the plan and the requests to the record. Made only by [`runner`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// The agents run the built-in engine.
    AgentsBuiltin,
    /// The agents run fio.
    AgentsFio,
    /// mpirun runs the built-in engine, one rank per task.
    MpiBuiltin,
    /// mpirun runs IOR or mdtest.
    MpiIor,
    /// mpirun runs the real io500.
    MpiIo500,
}

impl Runner {
    /// What does the I/O.
    pub fn engine(self) -> Engine {
        match self {
            Runner::AgentsBuiltin | Runner::MpiBuiltin => Engine::Builtin,
            Runner::AgentsFio => Engine::Fio,
            Runner::MpiIor => Engine::Ior,
            Runner::MpiIo500 => Engine::Io500,
        }
    }

    /// What starts the run's processes.
    pub fn launcher(self) -> Launcher {
        match self {
            Runner::AgentsBuiltin | Runner::AgentsFio => Launcher::Agents,
            Runner::MpiBuiltin | Runner::MpiIor | Runner::MpiIo500 => Launcher::Mpi,
        }
    }
}

/// A pair that cannot run. The messages are `pvfsctl bench`'s; the config, which points at the
/// value in the file, words them shorter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PairError {
    /// IOR's tasks meet through MPI, so only mpirun can start them.
    #[error(
        "engine \"ior\" runs under launcher \"mpi\": IOR is an MPI program whose tasks meet through MPI, so \
         the agents cannot start its share on each client. Set launcher = \"mpi\" (mpirun on the first client \
         must reach every client, e.g. by ssh) or keep launcher \"agents\" with engine \"builtin\" or \"fio\""
    )]
    IorNeedsMpi,
    /// io500 is an MPI program too.
    #[error(
        "engine \"io500\" runs under launcher \"mpi\": io500 is an MPI program whose tasks meet through MPI. \
         Set launcher = \"mpi\", or keep launcher \"agents\" with engine \"builtin\", which runs the IO500 \
         through the agents"
    )]
    Io500NeedsMpi,
    /// fio is no MPI program: mpirun would start unrelated copies.
    #[error(
        "engine \"fio\" is not an MPI program: use it with launcher \"agents\", or use engine \"builtin\" or \
         \"ior\" with launcher \"mpi\""
    )]
    FioIsNotMpi,
}

/// What `engine` under `launcher` runs, or why that pair cannot run.
pub fn runner(engine: Engine, launcher: Launcher) -> Result<Runner, PairError> {
    match (engine, launcher) {
        (Engine::Builtin, Launcher::Agents) => Ok(Runner::AgentsBuiltin),
        (Engine::Fio, Launcher::Agents) => Ok(Runner::AgentsFio),
        (Engine::Builtin, Launcher::Mpi) => Ok(Runner::MpiBuiltin),
        (Engine::Ior, Launcher::Mpi) => Ok(Runner::MpiIor),
        (Engine::Io500, Launcher::Mpi) => Ok(Runner::MpiIo500),
        (Engine::Ior, Launcher::Agents) => Err(PairError::IorNeedsMpi),
        (Engine::Io500, Launcher::Agents) => Err(PairError::Io500NeedsMpi),
        (Engine::Fio, Launcher::Mpi) => Err(PairError::FioIsNotMpi),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_none() {
        for e in Engine::ALL {
            assert_eq!(Engine::parse(e.as_str()), Some(e));
            assert_eq!(e.to_string(), e.as_str());
        }
        for l in Launcher::ALL {
            assert_eq!(Launcher::parse(l.as_str()), Some(l));
        }
        assert_eq!(Engine::parse("IOR"), None);
        assert_eq!(Launcher::parse("slurm"), None);
        assert_eq!(Engine::default(), Engine::Builtin);
        assert_eq!(Launcher::default(), Launcher::Agents);
    }

    #[test]
    fn serde_uses_the_user_facing_names() {
        assert_eq!(serde_json::to_string(&Engine::Ior).unwrap(), "\"ior\"");
        assert_eq!(serde_json::from_str::<Launcher>("\"mpi\"").unwrap(), Launcher::Mpi);
        assert!(serde_json::from_str::<Engine>("\"mpi\"").is_err());
    }

    #[test]
    fn every_pair_runs_something_or_says_why_not() {
        let table: Vec<String> = Engine::ALL
            .into_iter()
            .flat_map(|e| Launcher::ALL.into_iter().map(move |l| (e, l)))
            .map(|(e, l)| match runner(e, l) {
                Ok(r) => {
                    assert_eq!((r.engine(), r.launcher()), (e, l));
                    format!("{e}/{l}: {r:?}")
                }
                Err(err) => format!("{e}/{l}: {err:?}"),
            })
            .collect();
        assert_eq!(
            table,
            [
                "builtin/agents: AgentsBuiltin",
                "builtin/mpi: MpiBuiltin",
                "fio/agents: AgentsFio",
                "fio/mpi: FioIsNotMpi",
                "ior/agents: IorNeedsMpi",
                "ior/mpi: MpiIor",
                "io500/agents: Io500NeedsMpi",
                "io500/mpi: MpiIo500",
            ]
        );
        assert!(
            runner(Engine::Ior, Launcher::Agents)
                .unwrap_err()
                .to_string()
                .starts_with("engine \"ior\" runs under launcher \"mpi\": IOR is an MPI program")
        );
    }
}
