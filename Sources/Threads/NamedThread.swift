import Foundation

/// Starts a thread that runs `body`, named `name` (what `top -H` and a debugger show; Linux keeps the first 15
/// bytes). The thread lives until `body` returns.
func startThread(named name: String, _ body: @escaping @Sendable () -> Void) {
    // Foundation gives the OS the name only when it is set from the thread itself (see EventLoop.start), and only
    // once `start()` has returned: before, the Thread does not know its pthread yet and keeps the name to itself.
    let started = DispatchSemaphore(value: 0)
    let thread = Thread {
        started.wait()
        Thread.current.name = name
        body()
    }
    thread.start()
    started.signal()
}
