//! Out-of-tree series a profile can add to its kernel generation (`v6.12+migrc`). Each file
//! holds one series' behaviour; the upstream files call it through one named hook at each point
//! where the series acts, and the hook does nothing unless the profile has the feature.

pub mod migrc;
pub mod pagecache_promotion;
pub mod thp_zero_split;
