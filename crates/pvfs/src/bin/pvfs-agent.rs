//! `pvfs-agent`: the node daemon on its own (see `pvfs::agent_main`), a third the code of
//! `pvfs`, which runs as the agent too when named `pvfs-agent`.

fn main() -> std::process::ExitCode {
    pvfs::agent_main()
}
