import CGStreamer
import CGStreamerShims
import Foundation
import Synchronization

/// An output or input device as GStreamer's device monitor reports it.
public struct MonitoredDevice: Sendable, Hashable {
    /// What a person would call it ("Headphones", "Built-in Audio Analog Stereo").
    public var displayName: String
    /// The device class the provider gave ("Audio/Sink").
    public var deviceClass: String
    /// The sound server's own name for it, where the provider has one: for PulseAudio devices the sink name
    /// (GstPulseDevice's `internal-name`), which is what pulsesink's `device` takes.
    public var internalName: String?

    public init(displayName: String, deviceClass: String, internalName: String? = nil) {
        self.displayName = displayName
        self.deviceClass = deviceClass
        self.internalName = internalName
    }

    /// What identifies the device across added/removed messages.
    var key: String { internalName ?? "\(deviceClass)|\(displayName)" }
}

/// Why a ``DeviceMonitor`` could not start.
public enum DeviceMonitorError: Error, Equatable, Sendable {
    case cannotStart(String)
}

/// A device came or went.
public enum DeviceChange: Sendable, Hashable {
    case added(MonitoredDevice)
    case removed(MonitoredDevice)
}

/// GStreamer's device monitor (GstDeviceMonitor) for one class of devices, its bus read on a dedicated thread
/// (gst_bus_timed_pop_filtered) and every DEVICE_ADDED / DEVICE_REMOVED turned into a ``DeviceChange`` there.
/// Devices are deduplicated: the monitor reports devices present at start twice (in the list and again as
/// DEVICE_ADDED), and each comes out here once.
///
/// ```swift
/// let monitor = try DeviceMonitor(classes: "Audio/Sink")
/// let present = monitor.devices          // at start
/// for await change in monitor.changes { ... }
/// monitor.stop()
/// ```
// @unchecked Sendable: `monitor` and `bus` are set in init and released in deinit after the thread has exited;
// GstDeviceMonitor start/stop and GstBus pop are MT-safe. `known` is only touched by the bus thread after init.
public final class DeviceMonitor: @unchecked Sendable {
    /// Changes after start, in the order the monitor posted them (the latest 256 if nobody reads); ends after ``stop()``.
    public let changes: AsyncStream<DeviceChange>
    /// The devices present when the monitor started.
    public let devices: [MonitoredDevice]

    private let monitor: UnsafeMutablePointer<GstDeviceMonitor>
    private let bus: UnsafeMutablePointer<GstBus>
    private let continuation: AsyncStream<DeviceChange>.Continuation
    private let stopping = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    private let exited = DispatchSemaphore(value: 0)
    /// Device keys seen as present (bus thread only, after init).
    private var known: Set<String>

    /// Called on the bus thread for each change, before it is yielded to ``changes``; it must not block.
    public typealias ChangeHandler = @Sendable (DeviceChange) -> Void
    private let handler: ChangeHandler?

    /// Starts monitoring devices of `classes` (e.g. "Audio/Sink"); throws if no provider could start.
    public init(classes: String = "Audio/Sink", onChange handler: ChangeHandler? = nil) throws(DeviceMonitorError) {
        self.handler = handler
        GStreamer.initialize()
        guard let monitor = gst_device_monitor_new() else { throw .cannotStart("gst_device_monitor_new failed") }
        gst_device_monitor_add_filter(monitor, classes, nil)
        self.monitor = monitor
        self.bus = gst_device_monitor_get_bus(monitor)  // +1, released in deinit
        (changes, continuation) = AsyncStream.makeStream(of: DeviceChange.self, bufferingPolicy: .bufferingNewest(256))
        guard gst_device_monitor_start(monitor) != 0 else {
            devices = []
            known = []
            continuation.finish()
            stopped.store(true, ordering: .sequentiallyConsistent)
            exited.signal()
            throw .cannotStart("no device provider for \(classes) started")
        }
        var present: [MonitoredDevice] = []
        var list = gst_device_monitor_get_devices(monitor)
        let head = list
        while let node = list {
            if let device = node.pointee.data?.assumingMemoryBound(to: GstDevice.self) {
                present.append(Self.describe(device))
                gst_object_unref(UnsafeMutableRawPointer(device))
            }
            list = node.pointee.next
        }
        g_list_free(head)
        var seen = Set<String>()
        devices = present.filter { seen.insert($0.key).inserted }
        known = seen
        let thread = Thread { [self] in
            Thread.current.name = "lectern-devices"  // from inside, 15 bytes at most (Foundation on Linux)
            readBus()
            exited.signal()
        }
        thread.start()
    }

    deinit {
        stop()
        gst_object_unref(UnsafeMutableRawPointer(bus))
        gst_object_unref(UnsafeMutableRawPointer(monitor))
    }

    /// Stops the monitor and its thread (a message posted on the bus wakes it). Idempotent; not on the bus thread.
    public func stop() {
        guard !stopped.exchange(true, ordering: .sequentiallyConsistent) else { return }
        stopping.store(true, ordering: .sequentiallyConsistent)
        gst_bus_post(bus, gst_message_new_application(nil, gst_structure_new_empty("lectern-device-monitor-stop")))
        exited.wait()
        gst_device_monitor_stop(monitor)
        continuation.finish()
    }

    /// Blocks on the bus (no timeout: a thread that polled woke ten times a second for nothing) until ``stop()``.
    private func readBus() {
        let mask = GstMessageType(rawValue: GST_MESSAGE_DEVICE_ADDED.rawValue | GST_MESSAGE_DEVICE_REMOVED.rawValue
                                    | GST_MESSAGE_APPLICATION.rawValue)
        while !stopping.load(ordering: .sequentiallyConsistent) {
            guard let message = gst_bus_timed_pop_filtered(bus, clockTimeNone, mask) else { continue }
            defer { gst_message_unref(message) }
            let type = lectern_gst_message_type(UnsafeMutableRawPointer(message))
            guard type != UInt32(truncatingIfNeeded: GST_MESSAGE_APPLICATION.rawValue) else { continue }
            let added = type == UInt32(truncatingIfNeeded: GST_MESSAGE_DEVICE_ADDED.rawValue)
            var device: UnsafeMutablePointer<GstDevice>?
            if added {
                gst_message_parse_device_added(message, &device)
            } else {
                gst_message_parse_device_removed(message, &device)
            }
            guard let device else { continue }
            let described = Self.describe(device)
            gst_object_unref(UnsafeMutableRawPointer(device))
            if added {
                guard known.insert(described.key).inserted else { continue }
                handler?(.added(described))
                continuation.yield(.added(described))
            } else {
                guard known.remove(described.key) != nil else { continue }
                handler?(.removed(described))
                continuation.yield(.removed(described))
            }
        }
    }

    private static func describe(_ device: UnsafeMutablePointer<GstDevice>) -> MonitoredDevice {
        let raw = UnsafeMutableRawPointer(device)
        let name = gst_device_get_display_name(device).map { pointer in
            defer { g_free(pointer) }
            return String(cString: pointer)
        } ?? ""
        let deviceClass = gst_device_get_device_class(device).map { pointer in
            defer { g_free(pointer) }
            return String(cString: pointer)
        } ?? ""
        var internalName: String?
        if lectern_gst_object_has_property(raw, "internal-name"),
           let value = lectern_gst_object_get_string(raw, "internal-name") {
            internalName = String(cString: value)
            lectern_gst_free(value)
        }
        return MonitoredDevice(displayName: name, deviceClass: deviceClass, internalName: internalName)
    }
}
