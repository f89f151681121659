-- Baton history schema, version 3: what each run's processes used. Forward only, like 0001.
--
-- Each attempt's CPU time and peak memory are measured (from its cgroup, or from wait4 of its
-- reaped processes) and kept in the detail of the transition that ends the attempt (`cpuUser`,
-- `cpuSystem`, `memoryPeak`). The run's row now carries the run's figures, so that `history`
-- and `stats` read them without parsing details: CPU summed over the run's attempts, memory the
-- largest peak of any attempt. NULL where nothing was measured (a run cancelled while queued,
-- an in-process action, a run recorded before this version).
ALTER TABLE runs ADD COLUMN cpu_user    INTEGER;   -- microseconds of user CPU, all attempts
ALTER TABLE runs ADD COLUMN cpu_system  INTEGER;   -- microseconds of system CPU, all attempts
ALTER TABLE runs ADD COLUMN memory_peak INTEGER;   -- bytes: the largest peak of any attempt
