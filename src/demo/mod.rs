pub mod nps;
