export { EcError } from "../common/errors.js";
