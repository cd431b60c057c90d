import Foundation
import GStreamer
import LecternConfiguration
import LecternCore
import LecternLibrary
import LecternMedia
import Logging
import Synchronization

/// Measures books' loudness in the background, one book at a time, in a media reader's child of its own (never the
/// playing path, nor the reader that opens files): the integrated loudness of the book's files as one programme (EBU
/// R128), kept with the book; or why it could not be measured (all silence, a file that cannot be decoded, the time
/// ran out), kept too, and the book then plays at unity gain (docs/decisions/loudness.md).
///
/// ```swift
/// meter.measure(book)   // returns at once; `measured(book)` is called once the result is kept
/// ```
public final class LoudnessMeter: Sendable {
    /// The target in effect (the setting `loudness-target`), for every book's gain: one per daemon process, set at
    /// start and on a reload.
    public static let target = Mutex(DaemonOptions.defaultLoudnessTarget)
    /// The longest a book's measurement may take: a minute, and a minute for every 10 minutes of sound (decoding is
    /// 100 to 1,000 times faster than real time).
    static func timeout(forDuration duration: Duration) -> Duration {
        .seconds(60) + duration / 10
    }

    private let library: Library
    private let writer: LibraryWriter
    private let reader: MediaReader
    private let logger: Logger
    private let measured: @Sendable (Int64) async -> Void
    /// The books being measured, and those asked for meanwhile (in order).
    private let work = Mutex<(running: Int64?, waiting: [Int64])>((nil, []))

    public init(library: Library, writer: LibraryWriter, reader: MediaReader, logger: Logger,
         measured: @escaping @Sendable (Int64) async -> Void) {
        self.library = library
        self.writer = writer
        self.reader = reader
        self.logger = logger
        self.measured = measured
    }

    /// Whether `book` is being measured or waits to be.
    func isMeasuring(_ book: Int64) -> Bool {
        work.withLock { $0.running == book || $0.waiting.contains(book) }
    }

    /// Measures `book` (again) in the background; nothing when it is being measured or waits already.
    public func measure(_ book: Int64) {
        let start = work.withLock { work -> Bool in
            guard work.running != book, !work.waiting.contains(book) else { return false }
            guard work.running == nil else { work.waiting.append(book); return false }
            work.running = book
            return true
        }
        guard start else { return }
        Task.detached { [self] in
            var next: Int64? = book
            while let book = next {
                await measureNow(book)
                next = work.withLock { work in
                    work.running = work.waiting.isEmpty ? nil : work.waiting.removeFirst()
                    return work.running
                }
            }
        }
    }

    private func measureNow(_ book: Int64) async {
        let outcome: Result<Double, LoudnessProblem>
        do {
            let files = try await library.reading { try $0.files(of: book) }.filter(\.available)
            guard !files.isEmpty else { throw LoudnessProblem("the book has no files to measure") }
            let duration = Duration.microseconds(files.reduce(Int64(0)) { $0 + max(0, $1.duration ?? 0) })
            let started = ContinuousClock.now
            let measurement = try await reader.measureLoudness(files.map { URL(fileURLWithPath: $0.path) },
                                                               timeout: Self.timeout(forDuration: duration))
            if let integrated = measurement.integrated {
                outcome = .success(integrated)
                logger.info("measured a book's loudness", metadata: [
                    "book": "\(book)", "LUFS": "\((integrated * 10).rounded() / 10)",
                    "took": "\(ContinuousClock.now - started)",
                ])
            } else {
                outcome = .failure(LoudnessProblem("all silence: nothing above -70 LUFS"))
            }
        } catch let problem as LoudnessProblem {
            outcome = .failure(problem)
        } catch let error as MediaError {
            outcome = .failure(LoudnessProblem("\(error)"))
        } catch {
            // The book is gone, or the library cannot be read: nothing to keep.
            logger.notice("a book's loudness was not measured", metadata: ["book": "\(book)", "error": "\(error)"])
            return
        }
        if case .failure(let problem) = outcome {
            logger.notice("a book's loudness could not be measured; it plays at unity gain",
                          metadata: ["book": "\(book)", "why": "\(problem.reason)"])
        }
        do {
            try await writer.write { try $0.setLoudness(of: book, outcome) }
        } catch {
            logger.warning("a book's loudness could not be kept", metadata: ["book": "\(book)", "error": "\(error)"])
            return
        }
        await measured(book)
    }
}

extension Book {
    /// The linear gain loudness normalisation applies: the measured loudness brought to `target` LUFS; 1 when
    /// normalisation is off, or the loudness is not known (not measured yet, or it could not be).
    public func loudnessGain(target: Double) -> Double {
        guard normalise, let loudness else { return 1 }
        return min(pow(10, (target - loudness) / 20), PlayerState.maximumGain)
    }
}
