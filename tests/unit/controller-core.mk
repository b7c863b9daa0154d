## Unit tests of the controller core against a fake backend.
