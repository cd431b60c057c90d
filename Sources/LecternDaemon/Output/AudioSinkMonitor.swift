import Dispatch
import GStreamer
import Logging

/// GStreamer's device monitor for audio sinks, as one stream of changes: the output watcher's second source of
/// unplugs beside libpulse (whichever reports first). Started when the sound server connects, stopped when it goes;
/// the stream lasts as long as this monitor.
actor AudioSinkMonitor {
    /// Audio sinks added and removed while the monitor runs.
    nonisolated let changes: AsyncStream<DeviceChange>
    private let continuation: AsyncStream<DeviceChange>.Continuation
    private let logger: Logger
    /// The running monitor; nil while stopped or when GStreamer has none.
    private var monitor: DeviceMonitor?
    /// Starting and stopping the device monitor block for a moment: done here, not on the cooperative pool.
    private static let queue = DispatchQueue(label: "lectern.output.devices")

    init(logger: Logger) {
        self.logger = logger
        (changes, continuation) = AsyncStream.makeStream(of: DeviceChange.self, bufferingPolicy: .unbounded)
    }

    /// Starts the monitor (again: a running one is stopped first).
    func start() async {
        await stop()
        let continuation = continuation
        let logger = logger
        monitor = await withCheckedContinuation { (done: CheckedContinuation<DeviceMonitor?, Never>) in
            Self.queue.async {
                do {
                    done.resume(returning: try DeviceMonitor(classes: "Audio/Sink") { continuation.yield($0) })
                } catch {
                    logger.info("no GStreamer device monitor for audio sinks", metadata: ["error": "\(error)"])
                    done.resume(returning: nil)
                }
            }
        }
    }

    func stop() async {
        guard let monitor else { return }
        self.monitor = nil
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Self.queue.async {
                monitor.stop()
                done.resume()
            }
        }
    }
}
