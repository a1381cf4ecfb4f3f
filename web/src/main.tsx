import { render } from 'preact';
import { App } from './app.js';
import { markOverflowingTables } from './table-overflow.js';
import 'uplot/dist/uPlot.min.css';
import './styles.css';

const root = document.getElementById('app')!;
render(<App />, root);
markOverflowingTables(root);
