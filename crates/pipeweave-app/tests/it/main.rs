//! The application layer's commands through their API, as both front ends call them: on a host
//! with its files in memory and the shipped generators as plugins (run in this process).

mod commands;
mod host;
