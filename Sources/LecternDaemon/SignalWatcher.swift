import Dispatch
import Foundation

/// Turns POSIX signals into calls of `handler` on a dispatch queue (never in signal context).
// @unchecked: the sources are set once in init; dispatch sources are thread-safe to cancel.
final class SignalWatcher: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]

    init(signals: [Int32], handler: @escaping @Sendable (Int32) -> Void) {
        let queue = DispatchQueue(label: "lectern.signals")
        sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { handler(number) }
            source.resume()
            return source
        }
    }

    func cancel() { sources.forEach { $0.cancel() } }
}

