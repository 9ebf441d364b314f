/**
 * One seed for every fast-check property in the node tests, so a CI run tries the same inputs
 * each time and a failure reproduces: EC_FUZZ_SEED when set, a fresh one per run under
 * EC_RELIABILITY_FULL=1 (the long runs that go looking for new inputs), else a fixed one.
 * fast-check prints the seed and path of any counterexample it finds.
 */
import fc from "fast-check";

const seed = process.env.EC_FUZZ_SEED
  ? Number(process.env.EC_FUZZ_SEED)
  : process.env.EC_RELIABILITY_FULL === "1"
    ? Math.floor(Math.random() * 2 ** 31)
    : 20261129;
fc.configureGlobal({ ...fc.readConfigureGlobal(), seed });
