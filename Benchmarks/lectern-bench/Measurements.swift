import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Latency samples (ns) and their percentiles (nearest rank).
struct Samples: Sendable {
    private(set) var sorted: [UInt64]

    init(_ values: [UInt64]) { sorted = values.sorted() }

    var count: Int { sorted.count }

    func percentile(_ p: Double) -> UInt64 {
        guard !sorted.isEmpty else { return 0 }
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
        return sorted[Swift.min(Swift.max(rank, 1), sorted.count) - 1]
    }

    var p50: UInt64 { percentile(50) }
    var p95: UInt64 { percentile(95) }
    var p99: UInt64 { percentile(99) }
    var max: UInt64 { sorted.last ?? 0 }

    func json(unit: Double) -> [String: Double] {
        ["n": Double(count), "p50": Double(p50) / unit, "p95": Double(p95) / unit, "p99": Double(p99) / unit,
         "max": Double(max) / unit]
    }
}

func median(_ values: [Double]) -> Double {
    let s = values.sorted()
    guard !s.isEmpty else { return .nan }
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

/// Readings from /proc for one process.
enum ProcStats {
    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// VmRSS and VmHWM in kB.
    static func memory(_ pid: pid_t) -> (rssKB: Int, hwmKB: Int)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        var rss = -1, hwm = -1
        for line in text.split(separator: "\n") {
            if line.hasPrefix("VmRSS:") { rss = number(line) }
            if line.hasPrefix("VmHWM:") { hwm = number(line) }
        }
        return rss >= 0 && hwm >= 0 ? (rss, hwm) : nil
    }

    /// RSS split by /proc/PID/smaps_rollup, in kB: Private_Dirty (pages only this process wrote: heap, stacks,
    /// relocated data; what it really costs), Private_Clean and Shared_Clean (file-backed pages read and not
    /// written, such as code: the kernel can drop them and read them again).
    struct Rollup {
        var privateDirtyKB = 0, privateCleanKB = 0, sharedCleanKB = 0
    }

    static func rollup(_ pid: pid_t) -> Rollup? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/smaps_rollup", encoding: .utf8) else { return nil }
        var result = Rollup()
        for line in text.split(separator: "\n") {
            if line.hasPrefix("Private_Dirty:") { result.privateDirtyKB = number(line) }
            if line.hasPrefix("Private_Clean:") { result.privateCleanKB = number(line) }
            if line.hasPrefix("Shared_Clean:") { result.sharedCleanKB = number(line) }
        }
        return result
    }

    /// The live child processes of `pid`, whichever of its threads started them.
    static func children(_ pid: pid_t) -> [pid_t] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.flatMap { task in
            ((try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8)) ?? "")
                .split(separator: " ").compactMap { pid_t($0) }
        }
    }

    private static func number(_ line: Substring) -> Int {
        Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? -1
    }

    /// utime + stime in clock ticks (fields 14 and 15 of /proc/PID/stat).
    static func cpuTicks(_ pid: pid_t) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        // Fields after "(comm)" start at field 3.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let u = Int(fields[11]), let s = Int(fields[12]) else { return nil }
        return u + s
    }

    /// Every live thread's run time in ns (/proc/PID/task/*/schedstat, first field), by thread id: a finer
    /// cross-check of `cpuTicks`.
    static func schedNanoseconds(_ pid: pid_t) -> [String: UInt64]? {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return nil }
        var result: [String: UInt64] = [:]
        for task in tasks {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8),
                  let first = text.split(separator: " ").first, let ns = UInt64(first) else { continue }
            result[task] = ns
        }
        return result
    }

    /// Run time between two `schedNanoseconds` readings: threads seen at both ends count their difference,
    /// threads born in between all of theirs; threads that ended in between are missed.
    static func schedDelta(from start: [String: UInt64], to end: [String: UInt64]) -> UInt64 {
        end.reduce(0) { sum, entry in
            let before = start[entry.key] ?? 0
            return sum + (entry.value >= before ? entry.value - before : 0)
        }
    }

    static func threadCount(_ pid: pid_t) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").count) ?? 0
    }
}

/// CPU used by a process over a window: ticks (the /proc/PID/stat figure) and schedstat ns.
struct CPUWindow {
    let pid: pid_t
    let startTicks: Int
    let startSched: [String: UInt64]
    let start: ContinuousClock.Instant

    init(_ pid: pid_t) {
        self.pid = pid
        startTicks = ProcStats.cpuTicks(pid) ?? 0
        startSched = ProcStats.schedNanoseconds(pid) ?? [:]
        start = .now
    }

    struct Result {
        let seconds: Double
        let cpuSeconds: Double        // from utime+stime
        let schedCPUSeconds: Double   // from schedstat
        var percent: Double { cpuSeconds / seconds * 100 }
        var schedPercent: Double { schedCPUSeconds / seconds * 100 }
    }

    func finish() -> Result {
        let ticks = ProcStats.cpuTicks(pid) ?? startTicks
        let sched = ProcStats.schedDelta(from: startSched, to: ProcStats.schedNanoseconds(pid) ?? startSched)
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Result(seconds: seconds, cpuSeconds: Double(ticks - startTicks) / ProcStats.ticksPerSecond,
                      schedCPUSeconds: Double(sched) / 1e9)
    }
}

/// Whole-machine CPU use from /proc/stat: other work on the machine skews every figure here, so the report
/// says how busy the machine was.
struct MachineCPU {
    let busy: UInt64
    let total: UInt64

    init() {
        let line = (try? String(contentsOfFile: "/proc/stat", encoding: .utf8))?.split(separator: "\n").first ?? ""
        let fields = line.split(separator: " ").dropFirst().compactMap { UInt64($0) }
        // user nice system idle iowait irq softirq steal ...
        let idle = fields.count > 4 ? fields[3] + fields[4] : 0
        total = fields.prefix(8).reduce(0, +)
        busy = total - idle
    }

    /// Busy share of all CPUs since `earlier`, in % (100 = every CPU busy).
    func busyPercent(since earlier: MachineCPU) -> Double {
        guard total > earlier.total else { return 0 }
        return Double(busy - earlier.busy) / Double(total - earlier.total) * 100
    }

    static var loadAverage: String {
        ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?")
            .split(separator: " ").prefix(3).joined(separator: " ")
    }

    /// Waits until the machine has been quiet (all-CPU busy under `threshold` %) for `quietFor`, at most
    /// `limit`; returns the busy % of the last window and whether it got quiet.
    static func waitUntilQuiet(threshold: Double = 15, quietFor: Int = 3, limit: Duration) -> (Double, Bool) {
        let deadline = ContinuousClock.now + limit
        var quietWindows = 0
        var last = 0.0
        while ContinuousClock.now < deadline {
            let before = MachineCPU()
            sleepFor(.seconds(1))
            last = MachineCPU().busyPercent(since: before)
            quietWindows = last < threshold ? quietWindows + 1 : 0
            if quietWindows >= quietFor { return (last, true) }
        }
        return (last, false)
    }
}
