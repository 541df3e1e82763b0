//! A task's or a range's NUMA memory policy as a value (`struct mempolicy`'s mode, nodes and
//! flags), and the scenario's way of writing one ("bind:0,1", "interleave:0-1", ...). What a
//! policy does at allocation and on a NUMA hint fault is in mm/mempolicy.rs.

/// A set of nodes (`nodemask_t`): bit n is node n. Machines have at most 64 nodes here.
pub type Nodemask = u64;

pub const MAX_NUMNODES: u32 = 64;

/// The policy may migrate misplaced folios on NUMA hint faults (MPOL_F_MOF).
pub const MPOL_F_MOF: u8 = 1 << 0;
/// Migrate toward the node of the CPU that faults (MPOL_F_MORON).
pub const MPOL_F_MORON: u8 = 1 << 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MpolMode {
    Preferred,
    Bind,
    Interleave,
    Local,
    PreferredMany,
}

/// `struct mempolicy`. MPOL_DEFAULT is the absence of one (`Option<Mempolicy>` = None).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mempolicy {
    pub mode: MpolMode,
    pub nodes: Nodemask,
    pub flags: u8,
}

impl Mempolicy {
    /// Parses a policy as the scenario writes it: "default", "local", "bind:NODES",
    /// "preferred:NODE", "interleave:NODES", "preferred_many:NODES", with "+balancing"
    /// (MPOL_F_NUMA_BALANCING) allowed after bind and preferred_many; NODES is a numactl-style
    /// list such as "0,2-3". None is MPOL_DEFAULT. Nodes must exist among `nr_nodes`.
    pub fn parse(s: &str, nr_nodes: u32) -> Result<Option<Mempolicy>, String> {
        const FORMS: &str = "\"default\", \"local\", \"bind:0,1\", \"preferred:1\", \
                             \"interleave:0-1\", \"preferred_many:0,1\" or \"bind+balancing:0,1\"";
        let bad = || format!("expected a memory policy such as {FORMS}, found {s:?}");
        let (head, nodes) = match s.split_once(':') {
            Some((h, n)) => (h, Some(n)),
            None => (s, None),
        };
        let (mode, balancing) = match head.split_once('+') {
            Some((m, "balancing")) => (m, true),
            Some(_) => return Err(bad()),
            None => (head, false),
        };
        let mode = match mode {
            "default" | "local" if nodes.is_some() || balancing => {
                return Err(format!("expected no node list after {mode:?}, found {s:?}"))
            }
            "default" => return Ok(None),
            "local" => {
                return Ok(Some(Mempolicy {
                    mode: MpolMode::Local,
                    nodes: 0,
                    flags: 0,
                }))
            }
            "bind" => MpolMode::Bind,
            "preferred" => MpolMode::Preferred,
            "interleave" => MpolMode::Interleave,
            "preferred_many" => MpolMode::PreferredMany,
            _ => return Err(bad()),
        };
        if balancing && !matches!(mode, MpolMode::Bind | MpolMode::PreferredMany) {
            // sanitize_mpol_flags: -EINVAL
            return Err(format!(
                "expected +balancing only after bind or preferred_many, found {s:?}"
            ));
        }
        let Some(list) = nodes else {
            return Err(format!("expected a node list after {head:?}, found {s:?}"));
        };
        let mut mask: Nodemask = 0;
        for part in list.split(',') {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let (Ok(a), Ok(b)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) else {
                return Err(bad());
            };
            if a > b {
                return Err(format!(
                    "expected a node range low-high, found {part:?} in {s:?}"
                ));
            }
            if b >= nr_nodes {
                return Err(format!(
                    "expected nodes of the machine (0..={}), found node {b} in {s:?}",
                    nr_nodes - 1
                ));
            }
            for n in a..=b {
                mask |= 1 << n;
            }
        }
        if mode == MpolMode::Preferred && mask.count_ones() != 1 {
            return Err(format!(
                "expected one node after \"preferred\", found {s:?}"
            ));
        }
        Ok(Some(Mempolicy {
            mode,
            nodes: mask,
            flags: if balancing {
                MPOL_F_MOF | MPOL_F_MORON
            } else {
                0
            },
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pol(s: &str) -> Option<Mempolicy> {
        Mempolicy::parse(s, 3).unwrap()
    }

    #[test]
    fn policies_parse_like_numactl_node_lists() {
        let p = pol("interleave:0,2").unwrap();
        assert_eq!((p.mode, p.nodes, p.flags), (MpolMode::Interleave, 0b101, 0));
        assert_eq!(pol("bind:0-2").unwrap().nodes, 0b111);
        let b = pol("bind+balancing:1").unwrap();
        assert_eq!(b.flags, MPOL_F_MOF | MPOL_F_MORON);
        assert_eq!(pol("default"), None);
        assert_eq!(pol("local").unwrap().mode, MpolMode::Local);
        for bad in [
            "bind:3",
            "bind",
            "interleave:1-0",
            "preferred:0,1",
            "interleave+balancing:0",
            "local:0",
            "spread:0",
            "bind:x",
        ] {
            assert!(Mempolicy::parse(bad, 3).is_err(), "{bad}");
        }
        assert!(Mempolicy::parse("bind:3", 3)
            .unwrap_err()
            .contains("found node 3"));
    }
}

/// Properties of the node-list parser, checked against masks built here bit by bit.
#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    /// The nodes of `mask` written as numactl writes them: runs of two or more as "a-b".
    fn node_list(mask: Nodemask) -> String {
        let nodes: Vec<u32> = (0..64).filter(|n| mask >> n & 1 == 1).collect();
        let mut parts = Vec::new();
        let mut i = 0;
        while i < nodes.len() {
            let mut j = i;
            while j + 1 < nodes.len() && nodes[j + 1] == nodes[j] + 1 {
                j += 1;
            }
            parts.push(if j > i {
                format!("{}-{}", nodes[i], nodes[j])
            } else {
                nodes[i].to_string()
            });
            i = j + 1;
        }
        parts.join(",")
    }

    /// A machine's node count and a non-empty set of its nodes.
    fn machine_and_nodes() -> impl Strategy<Value = (u32, Nodemask)> {
        (1u32..=64).prop_flat_map(|nr_nodes| {
            let all = if nr_nodes == 64 {
                !0
            } else {
                (1u64 << nr_nodes) - 1
            };
            (
                Just(nr_nodes),
                any::<u64>()
                    .prop_map(move |m| m & all)
                    .prop_filter("empty", |m| *m != 0),
            )
        })
    }

    proptest! {
        #[test]
        fn a_node_list_names_exactly_its_nodes(
            (nr_nodes, mask) in machine_and_nodes(),
            mode in prop::sample::select(vec![
                ("bind", MpolMode::Bind),
                ("interleave", MpolMode::Interleave),
                ("preferred_many", MpolMode::PreferredMany),
            ]),
            one_by_one in any::<bool>(),
        ) {
            // the same set written as ranges, or node by node
            let list = if one_by_one {
                (0..64).filter(|n| mask >> n & 1 == 1).map(|n: u32| n.to_string()).collect::<Vec<_>>().join(",")
            } else {
                node_list(mask)
            };
            let s = format!("{}:{list}", mode.0);
            prop_assert_eq!(
                Mempolicy::parse(&s, nr_nodes),
                Ok(Some(Mempolicy { mode: mode.1, nodes: mask, flags: 0 }))
            );
        }

        #[test]
        fn a_node_beyond_the_machine_is_refused(
            (nr_nodes, mask) in machine_and_nodes(), beyond in 0u32..8,
        ) {
            let node = nr_nodes + beyond;
            let s = format!("bind:{},{node}", node_list(mask));
            let e = Mempolicy::parse(&s, nr_nodes).unwrap_err();
            prop_assert!(e.contains(&format!("found node {node} in")), "{}", e);
        }
    }
}
