// The tests' ports come from the one copy the bench and the scripts share.
export { freePort, refusingPort } from '../../scripts/free-port.mjs';
