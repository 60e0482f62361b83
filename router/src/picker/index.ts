/**
 * @module The endpoint picker's public surface (for tests and the benchmark that run it in-process).
 */
export { startPicker, HealthService, type Picker } from "./picker-server.js";
export { parsePickerOptions, pickerOptions, type PickerOptions } from "./config.js";
export { requestApp, routeRequest, ENGINE_HEADER, type PickerRoute, type PickerRequest } from "./picker-request.js";
export { Gaie } from "./envoy-messages.js";
