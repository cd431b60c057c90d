import ArgumentParser
import Foundation

/// `--days N`: a span of days ending today, as History1's from and to (µs since the epoch; 0: no bound).
struct DaysOption: ParsableArguments {
    @Option(help: "Only the last N days, today included (1 to 36500); default: all.") var days: Int?

    func validate() throws {
        if let days, !(1...36_500).contains(days) { throw ValidationError("--days is 1 to 36500") }
    }

    var span: (from: Int64, to: Int64) {
        guard let days else { return (0, 0) }
        let calendar = Calendar.current
        let start = calendar.date(byAdding: .day, value: 1 - days, to: calendar.startOfDay(for: Date())) ?? Date()
        return (Int64(start.timeIntervalSince1970 * 1_000_000), 0)
    }
}
