//! `pvfsctl`: see the `pvfs` crate; the personality comes from the name the program is run as.

fn main() -> std::process::ExitCode {
    pvfs::main()
}
