import ArgumentParser
import LecternClient

/// How far through its books are, as the commands that list, find and move books take it: one of --not-started,
/// --in-progress, --finished and --unfinished.
enum ProgressFlag: EnumerableFlag {
    case notStarted, inProgress, finished, unfinished

    static func help(for value: ProgressFlag) -> ArgumentHelp? {
        switch value {
        case .notStarted: "Only the books not started (their place at the very start)."
        case .inProgress: "Only the books in progress (their place past the start, not finished)."
        case .finished: "Only the finished books (played to the end, or marked with `lectern book finished`)."
        case .unfinished: "Only the books not finished (not started, or in progress)."
        }
    }

    var progress: BookProgress {
        switch self {
        case .notStarted: .notStarted
        case .inProgress: .inProgress
        case .finished: .finished
        case .unfinished: .unfinished
        }
    }
}
