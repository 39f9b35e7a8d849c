//! The real executables, run the way users run them: fresh temp dir, cleared environment.

mod agent;
mod azure;
mod bench;
mod bootstrap;
mod ca;
mod demo;
mod down;
mod generate;
mod lifecycle;
mod nodes;
mod reboot;
mod serve;
mod top;
mod up;
mod util;
mod validate;
